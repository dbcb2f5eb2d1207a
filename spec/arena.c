/* The spec's arena: every struct, array and string of a parsed config.json
 * is carved out of a few large chunks, so spec_free() is one loop and no
 * error path in the parser has to unwind partially built structures. */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/util/utils.h"
#include "spec/spec.h"
#include "spec/spec_internal.h"

#define ARENA_CHUNK_SIZE (16 * 1024)

struct arena_chunk {
    struct arena_chunk *next;
    size_t used, size;
    alignas(max_align_t) unsigned char data[];
};

struct spec_arena {
    struct arena_chunk *chunks; /* newest first; allocation happens in the first */
};

static struct arena_chunk *arena_chunk_new(size_t size)
{
    struct arena_chunk *chunk = xmalloc(sizeof(*chunk) + size);
    chunk->next = NULL;
    chunk->used = 0;
    chunk->size = size;
    return chunk;
}

struct spec_arena *spec_arena_new(void)
{
    return xcalloc(1, sizeof(struct spec_arena));
}

void spec_arena_free(struct spec_arena *arena)
{
    if (arena == NULL)
        return;
    struct arena_chunk *chunk = arena->chunks;
    while (chunk) {
        struct arena_chunk *next = chunk->next;
        free(chunk);
        chunk = next;
    }
    free(arena);
}

void *spec_arena_alloc(struct spec_arena *arena, size_t size)
{
    const size_t align = alignof(max_align_t);
    if (size == 0)
        size = 1;
    if (size > SIZE_MAX - align)
        abort(); /* nothing this big can be parsed from a 64 MiB document */
    size = (size + align - 1) & ~(align - 1);

    struct arena_chunk *chunk = arena->chunks;
    if (chunk == NULL || chunk->size - chunk->used < size) {
        /* Big allocations get a chunk of their own, kept behind the current
         * one so the current chunk's free space is not wasted. */
        if (size > ARENA_CHUNK_SIZE / 4 && chunk != NULL) {
            struct arena_chunk *big = arena_chunk_new(size);
            big->used = size;
            big->next = chunk->next;
            chunk->next = big;
            memset(big->data, 0, size);
            return big->data;
        }
        chunk = arena_chunk_new(size > ARENA_CHUNK_SIZE ? size : ARENA_CHUNK_SIZE);
        chunk->next = arena->chunks;
        arena->chunks = chunk;
    }
    void *p = chunk->data + chunk->used;
    chunk->used += size;
    memset(p, 0, size);
    return p;
}

void *spec_alloc(struct oci_spec *spec, size_t size)
{
    return spec_arena_alloc(spec->arena, size);
}

char *spec_strdup(struct oci_spec *spec, const char *s)
{
    if (s == NULL)
        return NULL;
    size_t len = strlen(s);
    char *copy = spec_arena_alloc(spec->arena, len + 1);
    memcpy(copy, s, len + 1);
    return copy;
}

struct oci_spec *spec_new_empty(void)
{
    struct oci_spec *spec = xcalloc(1, sizeof(*spec));
    spec->arena = spec_arena_new();
    return spec;
}

void spec_free(struct oci_spec *spec)
{
    if (spec == NULL)
        return;
    spec_arena_free(spec->arena);
    free(spec);
}

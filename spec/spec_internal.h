/* Private to spec/: the arena behind struct oci_spec. */
#ifndef AGENTCAGE_SPEC_INTERNAL_H
#define AGENTCAGE_SPEC_INTERNAL_H

#include <stddef.h>

struct spec_arena;

struct spec_arena *spec_arena_new(void);
void spec_arena_free(struct spec_arena *arena);
/* Zeroed, max_align_t-aligned memory that lives until spec_arena_free(). */
void *spec_arena_alloc(struct spec_arena *arena, size_t size);

#endif

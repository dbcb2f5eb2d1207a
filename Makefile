# agentcage: `make` builds everything (installing missing Debian packages),
# `make test` runs the whole suite (unit + integration), ending with
# "N passed, M failed".

CC ?= gcc
PKGS := yajl libseccomp libcap libidn2
VERSION := 0.1.0
# `make deb` passes the commit along (AGENTCAGE_COMMIT) to the package build
COMMIT ?= $(or $(AGENTCAGE_COMMIT),$(shell git rev-parse --short HEAD 2>/dev/null || echo unknown))

# Where `make install` puts things (as runc's Makefile: PREFIX=/usr/local;
# the Debian package uses PREFIX=/usr). The helpers' directory is compiled
# in (runtime/util/helpers.h).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec
HELPERS_DIR ?= $(LIBEXECDIR)/agentcage
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man

CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
	-Wno-missing-field-initializers -fno-strict-aliasing -ffunction-sections \
	-I. $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
# The runtime binary links the small libraries of its hot path (yajl,
# libseccomp, libcap) statically when their Debian archives are there: one
# `agentcage` command then maps and relocates three objects fewer, about
# 0.2-0.4 ms of its start (docs/benchmark.md). libidn2 with its libunistring
# too, when both archives are there (libunistring-dev): the egress proxy's
# two calls of it cost every command two more objects to map and relocate,
# 0.1 ms of each start. STATIC_LIBS=0 links them as shared libraries (a
# library update then needs no rebuild).
STATIC_LIBS ?= 1
STATIC_ARCHIVES := $(foreach a,libyajl_s.a libseccomp.a libcap.a,$(filter /%,$(shell $(CC) -print-file-name=$(a) 2>/dev/null)))
IDN_ARCHIVES := $(foreach a,libidn2.a libunistring.a,$(filter /%,$(shell $(CC) -print-file-name=$(a) 2>/dev/null)))
STATIC_IDN := $(if $(filter 2,$(words $(IDN_ARCHIVES))),-lidn2 -lunistring)
# glibc too (STATIC_LIBC=1, the default with STATIC_LIBS): a static-pie
# binary, still loaded at a random address, with no dynamic loader to map
# libc.so and bind its symbols at every start: 0.1-0.2 ms less of each
# command, `exec` 2.02 -> 1.83 ms and create+start+delete 7.57 -> 6.82 ms
# in interleaved A/B (docs/benchmark.md). Nothing in it loads a library at run
# time: SELinux is two procfs writes (runtime/util/selinux.c), the users it
# looks up are /etc/passwd's (passwd_file_user), and the egress worker's
# getaddrinfo runs in an empty root, where no NSS module can be found. A
# glibc update then needs a rebuild of agentcage, as the static libraries'
# do. The ASan build and the unit tests stay dynamic.
STATIC_LIBC ?= $(STATIC_LIBS)
LIBC_ARCHIVE := $(filter /%,$(shell $(CC) -print-file-name=libc.a 2>/dev/null))
ifeq ($(STATIC_LIBS)-$(words $(STATIC_ARCHIVES)),1-3)
ifeq ($(STATIC_LIBC)-$(words $(LIBC_ARCHIVE) $(STATIC_IDN)),1-3)
AGENTCAGE_STATIC := -static-pie
AGENTCAGE_LDLIBS := -lyajl_s -lseccomp -lcap $(STATIC_IDN) -lm
else
AGENTCAGE_LDLIBS := -Wl,-Bstatic -lyajl_s -lseccomp -lcap $(STATIC_IDN) -Wl,-Bdynamic $(if $(STATIC_IDN),,-lidn2) -lm
endif
else
AGENTCAGE_LDLIBS := $(LDLIBS)
endif

BUILD := build
# The binary lands at the top for the default build, inside any other build
# dir (make BUILD=build-asan ... gives build-asan/agentcage).
AGENTCAGE_BIN ?= $(if $(filter build,$(BUILD)),agentcage,$(BUILD)/agentcage)
# The helpers sit next to the binary in a build tree: the runtime finds
# them there (installed, in $(HELPERS_DIR)).
WATCHDOG_BIN ?= $(if $(filter build,$(BUILD)),agentcage-watchdog,$(BUILD)/agentcage-watchdog)
INSTALL_ENGINE_BIN ?= $(if $(filter build,$(BUILD)),agentcage-install-engine,$(BUILD)/agentcage-install-engine)
SPEC_SRCS := $(sort $(wildcard spec/*.c tier-annotations/*.c))
# The runtime's layers (docs/architecture.md), top to bottom: the CLI verbs,
# the container lifecycle, the Linux kernel work, cgroups, small utilities.
CLI_SRCS := $(sort $(wildcard runtime/cli/*.c))
RUNTIME_SRCS := $(sort $(wildcard runtime/container/*.c runtime/linux/*.c runtime/cgroup/*.c runtime/util/*.c))
ALL_HDRS := $(wildcard runtime/*/*.h spec/*.h tier-annotations/*.h hooks/*.h)
# The library: everything below the CLI, so unit tests can link it.
LIB_SRCS := $(SPEC_SRCS) $(RUNTIME_SRCS)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/tier_filters.o $(BUILD)/tier-annotations/tier_defs_data.o
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)

# `make` first installs what is missing, then builds in a second make: the
# library flags come from pkg-config, which only answers once the -dev
# packages are there, so they must be read by a make started after deps.
all: deps
	@$(MAKE) --no-print-directory binaries

binaries: $(AGENTCAGE_BIN) $(WATCHDOG_BIN) $(INSTALL_ENGINE_BIN)

deps:
	@scripts/setup-deps.sh

# The egress proxy's code, which agentcage runs in-process (hooks/Makefile.inc).
EGRESS_OBJ := $(BUILD)/hooks/egress_main.o
# Every libc symbol bound at load (-z now, with full RELRO): lazy binding
# resolves each function on its first call in every process the runtime
# forks (the init, the helpers' children) through a trampoline that saves
# the whole vector register state: 1-2.5% of a `run` on this machine's VM
# in interleaved A/B (docs/benchmark.md); bound once, the GOT is read-only
# too.
AGENTCAGE_LINK := $(AGENTCAGE_STATIC) -Wl,-z,now -Wl,-z,relro
# Hot text first: the functions a container's start and end run (ours,
# each in its own section by -ffunction-sections, and the members of the
# static archives that define the library functions among them), listed in
# runtime/hot-text.list, are placed together at the front of the text. Each
# process of a `run` (the runtime, the init until its execve, the helpers)
# then faults in a few 64 KiB windows of code instead of nearly all of the
# binary's: 8% of a plain `run` in interleaved A/B (docs/benchmark.md,
# "Hot text first"). integration/bench/hot-text.sh remakes the list. And
# packed relative relocations (DT_RELR): 3,200 pointers to relocate at each
# start from 0.7 KiB instead of 75.
ifeq ($(AGENTCAGE_STATIC),-static-pie)
HOT_TEXT_LD := $(BUILD)/hot-text.ld
AGENTCAGE_LINK += -Wl,-T,$(HOT_TEXT_LD) -Wl,-z,pack-relative-relocs
endif
$(BUILD)/hot-text.ld: runtime/hot-text.list scripts/hot-text-ld.sh
	@mkdir -p $(BUILD)
	scripts/hot-text-ld.sh runtime/hot-text.list $(LIBC_ARCHIVE) $(STATIC_ARCHIVES) $(IDN_ARCHIVES) > $@.tmp
	@mv $@.tmp $@
$(AGENTCAGE_BIN): $(CLI_SRCS:%.c=$(BUILD)/%.o) $(EGRESS_OBJ) $(BUILD)/libagentcage.a $(HOT_TEXT_LD)
	$(CC) $(CFLAGS) $(LDFLAGS) $(AGENTCAGE_LINK) -pthread -o $@ $(filter-out %.ld,$^) $(AGENTCAGE_LDLIBS)

$(BUILD)/libagentcage.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c $(ALL_HDRS) $(BUILD)/build-flags
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The compiler and its flags: every object is rebuilt when they change (a
# tree built before -ffunction-sections was added, another CFLAGS=)
BUILD_FLAGS := $(CC) $(CPPFLAGS) $(CFLAGS)
$(BUILD)/build-flags: FORCE
	@mkdir -p $(BUILD)
	@echo '$(BUILD_FLAGS)' | cmp -s - $@ || echo '$(BUILD_FLAGS)' > $@

# What is compiled into build_info.o and helpers.o; rebuilt when it changes
# (a new commit, another PREFIX).
BUILD_VARS := $(VERSION) $(COMMIT) $(HELPERS_DIR)
$(BUILD)/build-vars: FORCE
	@mkdir -p $(BUILD)
	@echo '$(BUILD_VARS)' | cmp -s - $@ || echo '$(BUILD_VARS)' > $@
$(BUILD)/runtime/util/build_info.o $(BUILD)/runtime/util/helpers.o: $(BUILD)/build-vars
$(BUILD)/runtime/util/build_info.o: override CFLAGS += -DAGENTCAGE_VERSION='"$(VERSION)"' \
	-DAGENTCAGE_COMMIT='"$(COMMIT)"'
$(BUILD)/runtime/util/helpers.o: override CFLAGS += -DAGENTCAGE_HELPERS_DIR='"$(HELPERS_DIR)"'

# tiers.json compiled in as a C string (sed only: no xxd/python at build time).
$(BUILD)/tiers_json.h: tier-annotations/tiers.json
	@mkdir -p $(dir $@)
	{ echo 'static const char tiers_json[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } >$@

# The tier definitions as C data: tiers.json parsed at build time by a
# generator linked with the parsing tier_data.c; the runtime's tier_data.o
# (TIER_DEFS_COMPILED) reads that data and parses nothing.
TIER_DEFS_GEN_OBJS := $(BUILD)/tier-defs-gen/tier_data_parse.o $(addprefix $(BUILD)/,tier-annotations/tier_json.o \
	tier-annotations/units.o runtime/util/alloc.o runtime/util/error.o runtime/util/utils.o \
	runtime/util/clock.o)
$(BUILD)/tier-defs-gen/tier_data_parse.o: tier-annotations/tier_data.c $(BUILD)/tiers_json.h $(ALL_HDRS) $(BUILD)/build-flags
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -I$(BUILD) -c -o $@ $<
$(BUILD)/tier-defs-gen/tier-defs-gen: tier-annotations/gen/tier_defs_gen.c $(TIER_DEFS_GEN_OBJS)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/tier-annotations/tier_defs_data.c: $(BUILD)/tier-defs-gen/tier-defs-gen
	ASAN_OPTIONS=detect_leaks=0 $< > $@.tmp && mv $@.tmp $@
$(BUILD)/tier-annotations/tier_defs_data.o: $(BUILD)/tier-annotations/tier_defs_data.c tier-annotations/tier_internal.h $(BUILD)/build-flags
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
# (the fuzz library, TIER_DEFS=parsed: parsed at run time, as before)
ifeq ($(TIER_DEFS),parsed)
$(BUILD)/tier-annotations/tier_data.o: $(BUILD)/tiers_json.h
$(BUILD)/tier-annotations/tier_data.o: override CFLAGS += -I$(BUILD)
else
$(BUILD)/tier-annotations/tier_data.o: override CFLAGS += -DTIER_DEFS_COMPILED
endif

# The tiers' seccomp filters: compiled to BPF here, from the syscall lists,
# by a generator of its own (a range tree) that proves its programs answer
# as libseccomp's, which it links; the runtime loads them as is.
$(BUILD)/gen/tier-seccomp-gen: tier-annotations/seccomp/gen.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -lseccomp

$(BUILD)/gen/tier_filters.c: $(BUILD)/gen/tier-seccomp-gen tier-annotations/seccomp/syscalls.list
	$(BUILD)/gen/tier-seccomp-gen tier-annotations/seccomp/syscalls.list > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/tier_filters.o: $(BUILD)/gen/tier_filters.c runtime/linux/tier_seccomp.h $(BUILD)/build-flags
	$(CC) $(CFLAGS) -I. -c -o $@ $<

# The per-container watchdog: static and small, as one runs per tiered
# container for its whole life. Installed next to agentcage.
# Its seccomp filter is compiled by libseccomp at build time (it has no libc).
$(BUILD)/gen/watchdog-filter-gen: runtime/watchdog/filter_gen.c runtime/linux/gen/filter_export.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -lseccomp

$(BUILD)/gen/watchdog_filter.h: $(BUILD)/gen/watchdog-filter-gen
	$(BUILD)/gen/watchdog-filter-gen > $@.tmp && mv $@.tmp $@

# The egress proxy worker's seccomp filter, compiled by libseccomp at build
# time too: helper_sandbox_enter loads it as is (runtime/linux/gen/).
$(BUILD)/gen/worker-filter-gen: runtime/linux/gen/worker_filter_gen.c runtime/linux/gen/filter_export.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -lseccomp

$(BUILD)/gen/worker_filter.h: $(BUILD)/gen/worker-filter-gen
	$(BUILD)/gen/worker-filter-gen > $@.tmp && mv $@.tmp $@

$(BUILD)/runtime/linux/helper_sandbox.o: $(BUILD)/gen/worker_filter.h
$(BUILD)/runtime/linux/helper_sandbox.o: override CFLAGS += -I$(BUILD)/gen

# agentcage install ENGINE runs this (runtime/cli/install.c)
$(INSTALL_ENGINE_BIN): scripts/install-engine.sh
	@mkdir -p $(dir $@)
	install -m 755 $< $@

$(WATCHDOG_BIN): runtime/watchdog/watchdog.c runtime/watchdog/landlock_records.h runtime/linux/landlock_abi.h \
		$(BUILD)/gen/watchdog_filter.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -Os -Wall -Wextra -static -nostdlib -fno-stack-protector -fno-builtin \
		-fcf-protection=none -ffreestanding -Wl,--gc-sections -Wl,--build-id=none -I. -I$(BUILD)/gen -o $@ $<

$(BUILD)/tests/%: tests/%.c tests/testlib.h $(BUILD)/libagentcage.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libagentcage.a $(LDLIBS)

# the helpers' generated filters, loaded as the helpers load them
$(BUILD)/tests/test_helper_filters: $(BUILD)/gen/worker_filter.h $(BUILD)/gen/watchdog_filter.h
$(BUILD)/tests/test_helper_filters: override CFLAGS += -I$(BUILD)/gen

# the checks that are scripts, run with the unit tests
UNIT_SCRIPTS := tests/check-layers.sh tests/check-tier-seccomp-gen.sh tests/check-hot-text.sh
unit: all
	@$(MAKE) --no-print-directory $(TEST_BINS)
	@BUILD=$(BUILD) tests/run-unit.sh $(TEST_BINS) $(UNIT_SCRIPTS)

# The whole suite, as CI runs it.
test: all
	@$(MAKE) --no-print-directory $(TEST_BINS)
	@BUILD=$(BUILD) integration/run-all.sh $(TEST_BINS) $(UNIT_SCRIPTS)

# ASan+UBSan+LeakSanitizer: the unit tests and a few real containers, built
# into their own dir so they never mix with the normal objects.
ASAN_BUILD := build-asan
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
ASAN_LDFLAGS := -fsanitize=address,undefined

# `make test` already runs the sanitizer and fuzz suites (integration/run-all.sh).
check: test

sanitize: sanitize-build
	@tests/sanitize.sh $(ASAN_BUILD)

sanitize-build: deps
	$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) CFLAGS='$(ASAN_CFLAGS)' LDFLAGS='$(ASAN_LDFLAGS)' STATIC_LIBC=0 \
		$(ASAN_BUILD)/agentcage $(ASAN_BUILD)/agentcage-watchdog $(TEST_SRCS:tests/%.c=$(ASAN_BUILD)/tests/%)

# libFuzzer harnesses (tests/fuzz/fuzz_*.c) against the library built by
# clang with coverage and ASan+UBSan in $(BUILD)/fuzz/lib. `make fuzz-run`
# runs each for FUZZ_SECONDS on its corpus; a crash fails the run and is kept
# as tests/fuzz/corpus/HARNESS/regression-*.
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_LIB := $(BUILD)/fuzz/lib/libagentcage.a
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 60

fuzz: deps
	@$(MAKE) --no-print-directory $(FUZZ_BINS)

# Only what the harnesses reach (the parsers, the state reader and their
# helpers), so a file being edited elsewhere cannot break the fuzz build.
FUZZ_LIB_SRCS := $(SPEC_SRCS) $(wildcard runtime/util/*.c) runtime/container/state.c $(wildcard runtime/cgroup/*.c) \
	hooks/policy_hooks.c hooks/audit.c hooks/sha256.c hooks/hook_state.c hooks/approvals.c hooks/egress_parse.c
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.c=$(BUILD)/fuzz/lib/%.o)

$(FUZZ_LIB): $(FUZZ_LIB_SRCS) $(ALL_HDRS)
	$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzz/lib CC=$(FUZZ_CC) TIER_DEFS=parsed \
		CFLAGS='-O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN)' $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $(FUZZ_LIB_OBJS)

$(FUZZ_BINS): $(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Wno-unused-parameter -I. \
		$(shell pkg-config --cflags $(PKGS) 2>/dev/null) -fsanitize=fuzzer $(FUZZ_SAN) \
		-o $@ $< $(FUZZ_LIB) $(LDLIBS)

fuzz-run: fuzz
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

# `make install` as runc's: the binary into $(BINDIR), its helpers into
# $(HELPERS_DIR), man pages, bash completion, and the engine snippets
# (what `agentcage install ENGINE` writes, for an operator who configures by
# hand) into $(DATADIR)/agentcage/engines. `install-files` installs what is
# built (the Debian package calls it; debian/rules). The egress proxy's
# worker runs as the system user agentcage-egress, made here unless the
# install goes to a DESTDIR (the package's postinst then makes it).
install: all
	@$(MAKE) --no-print-directory install-files
	$(if $(DESTDIR),,scripts/egress-user.sh)

ENGINE_SNIPPETS := $(addprefix $(BUILD)/engines/,docker-daemon.json podman-50-agentcage.conf \
	containerd-agentcage.toml) integration/kubernetes/runtimeclass.yaml integration/kubernetes/pod-tier2.yaml

$(BUILD)/engines/docker-daemon.json: ENGINE = docker
$(BUILD)/engines/podman-50-agentcage.conf: ENGINE = podman
$(BUILD)/engines/containerd-agentcage.toml: ENGINE = containerd --no-import
$(BUILD)/engines/%: scripts/install-engine.sh $(BUILD)/build-vars
	@mkdir -p $(dir $@)
	@rm -f $@
	AGENTCAGE_INSTALL_PROG=make scripts/install-engine.sh $(ENGINE) --binary $(BINDIR)/agentcage --config $@ 2>/dev/null

install-files: $(ENGINE_SNIPPETS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(HELPERS_DIR) $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/agentcage/engines
	install -m 755 $(AGENTCAGE_BIN) $(DESTDIR)$(BINDIR)/agentcage
	install -m 755 $(WATCHDOG_BIN) $(HOOK_BINS) $(INSTALL_ENGINE_BIN) $(DESTDIR)$(HELPERS_DIR)/
	install -m 644 docs/man/agentcage.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 docs/man/agentcage-tiers.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 644 scripts/completion.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/agentcage
	install -m 644 $(ENGINE_SNIPPETS) $(DESTDIR)$(DATADIR)/agentcage/engines/

# only what install put there (the tier wrappers of `agentcage install --tier`
# may share $(HELPERS_DIR) under /usr/local)
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/agentcage $(DESTDIR)$(MANDIR)/man8/agentcage.8 $(DESTDIR)$(MANDIR)/man7/agentcage-tiers.7 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/agentcage \
		$(addprefix $(DESTDIR)$(HELPERS_DIR)/,$(notdir $(WATCHDOG_BIN) $(HOOK_BINS) $(INSTALL_ENGINE_BIN))) \
		$(addprefix $(DESTDIR)$(DATADIR)/agentcage/engines/,$(notdir $(ENGINE_SNIPPETS)))
	-rmdir $(DESTDIR)$(HELPERS_DIR) $(DESTDIR)$(DATADIR)/agentcage/engines $(DESTDIR)$(DATADIR)/agentcage 2>/dev/null

# A Debian package (debian/), built by dpkg-buildpackage in a copy of the
# tracked files under $(BUILD)/deb, so nothing lands beside the checkout;
# the .deb is $(BUILD)/deb/agentcage_$(VERSION)_ARCH.deb.
DEB_SRC := $(BUILD)/deb/agentcage-$(VERSION)
deb:
	@scripts/setup-deps.sh debhelper dpkg-dev
	rm -rf $(BUILD)/deb
	mkdir -p $(DEB_SRC)
	git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C $(DEB_SRC)
	cd $(DEB_SRC) && AGENTCAGE_COMMIT=$(COMMIT) dpkg-buildpackage -b -uc -us -j2 > ../build.log 2>&1 || \
		{ tail -20 ../build.log; exit 1; }
	@ls $(BUILD)/deb/*.deb

# The README's first command: build everything, then run a busybox container.
demo: all
	@scripts/demo.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) agentcage agentcage-watchdog agentcage-install-engine

FORCE:
.PHONY: all binaries deps unit test check sanitize sanitize-build fuzz fuzz-run clean demo install install-files \
	uninstall deb FORCE

# the agent policy hooks (hooks/)
include hooks/Makefile.inc

# agentcage: `make` builds everything (installing missing Debian packages),
# `make test` runs the whole suite (unit + integration), ending with
# "N passed, M failed".

CC ?= gcc
PKGS := yajl libseccomp libcap libselinux
VERSION := 0.1.0
COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
	-Wno-missing-field-initializers -fno-strict-aliasing \
	-DAGENTCAGE_VERSION='"$(VERSION)"' -DAGENTCAGE_COMMIT='"$(COMMIT)"' \
	$(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

BUILD := build
SPEC_SRCS := $(sort $(wildcard spec/*.c tier-annotations/*.c))
RUNTIME_SRCS := $(sort $(wildcard runtime/*.c))
# The library: everything but main.c, so unit tests can link it.
LIB_SRCS := $(SPEC_SRCS) $(filter-out runtime/main.c,$(RUNTIME_SRCS))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)

all: deps agentcage

deps:
	@scripts/setup-deps.sh

agentcage: $(BUILD)/runtime/main.o $(BUILD)/libagentcage.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libagentcage.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c $(wildcard runtime/*.h spec/*.h tier-annotations/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/%.c tests/testlib.h $(BUILD)/libagentcage.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libagentcage.a $(LDLIBS)

unit: $(TEST_BINS)
	@tests/run-unit.sh $(TEST_BINS)

# The whole suite, as CI runs it.
test: all $(TEST_BINS)
	@integration/run-all.sh $(TEST_BINS)

check: test

# The README's first command: build everything, then run a busybox container.
demo: all
	@scripts/demo.sh

clean:
	rm -rf $(BUILD) agentcage

.PHONY: all deps unit test check clean demo

# kernlint: a static analyzer for Metal Shading Language compute kernels.
# Targets: all check asan ubsan leakcheck fuzz fuzz-smoke soak bench corpus-report docs install
# clean deps syntax-check.

include grammar/pins.mk

CC ?= cc
PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build/release
GRAMMARS = build/grammars
SAN ?=
# Which compiler CC is, asked once when make starts: gcc and clang (Apple's too) differ in their
# LTO and warning flags. Anything else is treated as gcc-compatible.
CC_VERSION := $(shell $(CC) --version 2>/dev/null)
CC_KIND := $(if $(findstring clang,$(CC_VERSION)),clang, \
             $(if $(findstring Free Software,$(CC_VERSION)),gcc,other))
# The release build links with LTO: the analyses call small helpers across files (node kinds,
# fields, the arena) hundreds of millions of times on a large file. Flavours that set OPT
# (asan, ubsan, debug, fuzz) build without it. gcc splits the link into jobs itself; clang's
# ThinLTO does the same, with ld64 on macOS and the LLVMgold plugin (or lld) elsewhere.
LTO = $(if $(filter clang,$(CC_KIND)),-flto=thin,-flto=auto)
OPT ?= -O2 -g $(LTO)

PKGS = tree-sitter libpcre2-8 jansson inih
# elpa-eglot is the second editor the language server's tests drive (with emacs-nox, below);
# python3-jsonschema validates the JSON output against docs/kernlint.schema.json.
DEB_PKGS = libtree-sitter-dev libpcre2-dev libjansson-dev libinih-dev pkg-config \
           libclang-rt-14-dev elpa-eglot python3-jsonschema
# Tools, by command name and the Debian package that provides it (npm is skipped when present).
DEB_TOOLS = npm:npm oclgrind-kernel:oclgrind valgrind:valgrind clang:clang git:git patch:patch \
            pre-commit:pre-commit nvim:neovim emacs:emacs-nox groff:groff-base man:man-db
# Read from pkg-config when a recipe first needs them, not when the Makefile is read: in
# `make deps all` on a fresh machine the packages are installed after the Makefile is read. Each is
# computed once, then kept (the eval replaces the lazy definition with its value).
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(shell pkg-config --cflags $(PKGS) 2>/dev/null))$(PKG_CFLAGS)
# tree-sitter is linked statically where Debian ships its archive: the node API is called through
# the PLT otherwise, once per node visited. The bench's bare parse links the same way. A shell
# test, not $(wildcard), since make caches a folder's listing from before `make deps` installed it.
# ($$(shell) runs inside the :=, so its output is not read again as makefile text: a # or $ in it
# stays as it is.)
TS_ARCHIVE = $(eval TS_ARCHIVE := $$(shell a="$$$$(pkg-config --variable=libdir tree-sitter \
               2>/dev/null)/libtree-sitter.a"; [ -f "$$$$a" ] && echo "$$$$a"))$(TS_ARCHIVE)
PKG_LIBS = $(eval PKG_LIBS := $(TS_ARCHIVE) $$(shell pkg-config --libs \
             $(if $(TS_ARCHIVE),$(filter-out tree-sitter,$(PKGS)),$(PKGS)) 2>/dev/null))$(PKG_LIBS)

# The release build is optimised with a profile (gcc's -fprofile-use) of kernlint linting the
# bundled examples and fixtures: an instrumented build in $(BUILD)-pgo lints them once, and the
# release objects are compiled with its counts. The analyses branch on node kinds all the time,
# and the profile tells the compiler which ways they go: about 4% less CPU on the corpus. Only
# in build/release with the default OPT and where CC is gcc (asked when make starts, so the
# compiler must be there first, as the README says). PGO=0 turns it off: a change to one source
# recompiles every release object after a new training, twice the time of a plain build.
PGO_CC = $(filter gcc,$(CC_KIND))
PGO ?= 1
PGO_ON = $(and $(filter 1,$(PGO)),$(filter file,$(origin OPT)),$(filter build/release,$(BUILD)), \
           $(PGO_CC))
PGO_BUILD = $(BUILD)-pgo
PGO_SRCS = $(LIB_SRCS) analyzer/cli/main.c
PGO_OBJS = $(PGO_SRCS:%.c=$(PGO_BUILD)/%.o)
# gcc names a compilation's counts file, and keys a static function's counts, by the
# compilation's base name (normally the object's path): both builds give each source the same
# one (-dumpbase). The link passes the rest of the flags on to link-time optimisation.
PGO_LD = -fprofile-generate=$(abspath $(PGO_BUILD)/profile) -fprofile-update=atomic
PGO_GEN = $(PGO_LD) -dumpbase $*.c
# The counts file of main.c, which every training writes: the path is built into the
# instrumented objects, so a tree copied or moved after they were built writes into the old one.
PGO_HASH := \#
PGO_GCDA = $(PGO_BUILD)/profile/$(subst /,$(PGO_HASH),$(abspath analyzer/cli/main.c)).gcda
# Code the training does not reach is optimised as without a profile. A source changed after
# the training is always trained again first; compiled by hand, it may fail (gcc's "missing
# counts" cannot be turned off).
PGO_USE_LD = $(if $(PGO_ON),-fprofile-use=$(abspath $(PGO_BUILD)/profile) \
               -fprofile-partial-training -Wno-missing-profile -Wno-coverage-mismatch)
PGO_USE = $(if $(PGO_ON),$(PGO_USE_LD) -dumpbase $*.c)

WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS_ALL = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -pthread $(OPT) $(WARN) -I. \
             $(PKG_CFLAGS) \
             $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all) $(CFLAGS)
# An LTO link optimises again across files, where GCC's maybe-uninitialized warning misfires on
# values set through an out-parameter; every other warning still fails the build. clang has no
# such warning, and an unknown -Wno- option is an error under -Werror.
LDFLAGS_ALL = $(if $(SAN),-fsanitize=$(SAN)) \
              $(if $(filter -flto%,$(OPT)),$(filter -flto%,$(OPT)) \
                $(if $(filter clang,$(CC_KIND)),,-Wno-maybe-uninitialized)) $(LDFLAGS)
LIBS = $(PKG_LIBS) -lm -pthread

# What the objects of $(BUILD) were compiled with: the compiler, its version and the flags.
# Objects depend on this file, so `make CC=clang` over a gcc build (or new flags) compiles them
# again instead of linking objects of another compiler, whose LTO bytecode it cannot read. It is
# only rewritten when it differs, so an unchanged build stays up to date (and `make -q` writes
# nothing: its recipe does not run there). CFLAGS_ALL is taken unexpanded: pkg-config is asked
# only when a recipe first needs it.
FLAGS_STAMP = $(BUILD)/.flags
FLAGS_TEXT = $(strip $(CC) | $(CC_VERSION) | $(value CFLAGS_ALL) | $(OPT) $(WARN) $(SAN) \
               $(CFLAGS) | $(LDFLAGS_ALL) | pgo $(PGO_ON))
ifneq ($(FLAGS_TEXT),$(strip $(shell cat $(FLAGS_STAMP) 2>/dev/null)))
$(FLAGS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(subst ','\'',$(FLAGS_TEXT))' >$@
endif

LIB_SRCS = $(filter-out analyzer/cli/main.c, \
             $(wildcard analyzer/*.c analyzer/*/*.c grammar/*.c rules/*.c))
LIB_OBJS = $(LIB_SRCS:%.c=$(BUILD)/%.o)
GRAMMAR_OBJS = $(GRAMMARS)/cpp-parser.o $(GRAMMARS)/cpp-scanner.o \
               $(GRAMMARS)/python-parser.o $(GRAMMARS)/python-scanner.o
UNIT_SRCS = $(wildcard tests/unit/*.c)
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRCS = $(wildcard tests/tools/*.c)
TOOL_BINS = $(TOOL_SRCS:tests/tools/%.c=$(BUILD)/tools/%)
FUZZ_SRCS = $(wildcard tests/fuzz/*.c)
FUZZ_NAMES = $(FUZZ_SRCS:tests/fuzz/%.c=%)
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60

.PHONY: all check test-suite asan ubsan leakcheck fuzz fuzz-smoke fuzz-run soak bench corpus-report
.PHONY: install clean deps deps-check docs syntax-check
.PHONY: grammars FORCE
.DELETE_ON_ERROR:

all: deps-check $(BUILD)/kernlint kernlint

kernlint: $(BUILD)/kernlint
	@if [ "$(BUILD)" = "build/release" ]; then ln -sf $(BUILD)/kernlint kernlint; fi

# Fail early, and say what to install, when a system dependency is missing.
deps-check:
	@missing=""; for p in $(PKGS); do pkg-config --exists $$p 2>/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "kernlint: missing libraries:$$missing"; \
	  echo "  install them with: apt-get install -y $(DEB_PKGS)   (or run: make deps)"; exit 2; fi; \
	if [ ! -f $(GRAMMARS)/cpp/src/parser.c ] || [ ! -f $(GRAMMARS)/python/src/parser.c ]; then \
	  echo "kernlint: the pinned grammars are not fetched yet; run: make deps"; exit 2; fi

# Install the Debian packages (as root) and fetch the pinned grammars and the SARIF validator.
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	for t in $(DEB_TOOLS); do command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential $$missing >/dev/null; \
	  else \
	    echo "kernlint: missing Debian packages; run as root:"; \
	    echo "  apt-get install -y build-essential$$missing"; exit 2; \
	  fi; \
	fi
	@$(MAKE) --no-print-directory grammars
	@tests/sarif-validator.sh --install

grammars: $(GRAMMARS)/cpp/src/parser.c $(GRAMMARS)/python/src/parser.c

# The grammar sources are made by `make deps`. Naming them as targets matters: GNU make reads a
# folder once, so in `make deps all` a pattern rule would still see them missing after deps ran.
# They depend on the pins, so a new pin fetches again.
$(GRAMMARS)/cpp/src/parser.c $(GRAMMARS)/cpp/src/scanner.c &: grammar/pins.mk
	@grammar/fetch.sh tree-sitter-cpp $(TS_CPP_VERSION) $(TS_CPP_SHA256) $(GRAMMARS)/cpp
$(GRAMMARS)/python/src/parser.c $(GRAMMARS)/python/src/scanner.c &: grammar/pins.mk
	@grammar/fetch.sh tree-sitter-python $(TS_PYTHON_VERSION) $(TS_PYTHON_SHA256) $(GRAMMARS)/python

# Third-party grammar code: compiled once for every build flavour, without our warning flags.
$(GRAMMARS)/cpp-%.o: $(GRAMMARS)/cpp/src/%.c
	$(CC) -std=c11 -O1 -g0 -w -fPIC -I$(GRAMMARS)/cpp/src -c $< -o $@
$(GRAMMARS)/python-%.o: $(GRAMMARS)/python/src/%.c
	$(CC) -std=c11 -O1 -g0 -w -fPIC -I$(GRAMMARS)/python/src -c $< -o $@

$(BUILD)/%.o: %.c $(FLAGS_STAMP) $(if $(PGO_ON),$(PGO_BUILD)/trained)
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CFLAGS_ALL) $(PGO_USE) -MMD -MP -c $< -o $@

# The profile: the instrumented kernlint lints the examples and fixtures (findings expected).
$(PGO_BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC $< (instrumented)"
	@$(CC) $(CFLAGS_ALL) $(PGO_GEN) -MMD -MP -c $< -o $@

$(PGO_BUILD)/kernlint: $(PGO_OBJS) $(GRAMMAR_OBJS)
	@echo "  LD $@"
	@$(CC) $(LDFLAGS_ALL) $(PGO_LD) -o $@ $^ $(LIBS)

# Retrained when the program changes, not when a fixture does: the counts only steer the
# optimiser. Findings (exit 1) are expected; a usage or I/O error (2) would train on nothing.
$(PGO_BUILD)/trained: $(PGO_BUILD)/kernlint
	@echo "  PGO training on the examples and fixtures"
	@rm -rf $(PGO_BUILD)/profile
	@st=0; $(PGO_BUILD)/kernlint -q -j 1 --format sarif examples tests/fixtures \
	  >$(PGO_BUILD)/training.log 2>&1 || st=$$?; \
	if [ $$st -gt 1 ]; then tail -5 $(PGO_BUILD)/training.log; \
	  echo "kernlint: PGO training failed (exit $$st); build with PGO=0 to skip it"; exit 1; fi
	@[ -f '$(PGO_GCDA)' ] || { echo "kernlint: PGO training wrote no $(PGO_GCDA) (the" \
	  "tree was moved since $(PGO_BUILD) was built?); run: make clean all"; exit 1; }
	@touch $@

$(BUILD)/libkernlint.a: $(LIB_OBJS)
	@rm -f $@
	@ar rcs $@ $^

$(BUILD)/kernlint: $(BUILD)/analyzer/cli/main.o $(BUILD)/libkernlint.a $(GRAMMAR_OBJS)
	@echo "  LD $@"
	@$(CC) $(LDFLAGS_ALL) $(PGO_USE_LD) -o $@ $^ $(LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libkernlint.a $(GRAMMAR_OBJS)
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/tools/%: tests/tools/%.c $(wildcard tests/tools/*.inc) $(BUILD)/libkernlint.a $(GRAMMAR_OBJS)
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $(filter-out %.inc,$^) $(LIBS)

# msl2cl has modules of its own (tests/tools/msl2cl/), compiled with it, before the library.
$(BUILD)/tools/msl2cl: tests/tools/msl2cl.c $(wildcard tests/tools/msl2cl/*.c) \
                       $(wildcard tests/tools/*.inc tests/tools/msl2cl/*.h) \
                       $(BUILD)/libkernlint.a $(GRAMMAR_OBJS)
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $(filter-out %.inc %.h,$^) $(LIBS)

# libFuzzer harnesses; only built in the fuzz flavour, whose SAN has fuzzer-no-link.
$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libkernlint.a $(GRAMMAR_OBJS)
	@echo "  LD $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -fsanitize=fuzzer -o $@ $^ $(LIBS)

# The suite for one build flavour; tests/run.sh prints the closing "N passed, N failed, N skipped"
# line, and gives sanitizer reports an exit status of their own (86) and a FAIL line.
# CHECK_AGAIN=1 says the suite already ran in another flavour of this `make check`: the tests
# whose checks no kernlint build changes (the suite's own test with a stub kernlint, the Oclgrind
# proofs) then say SKIP instead of running a second time.
test-suite: deps-check $(BUILD)/kernlint $(UNIT_BINS) $(TOOL_BINS)
	@KL_CHECK_AGAIN=$(CHECK_AGAIN) tests/run.sh $(BUILD)

check:
	@$(MAKE) --no-print-directory test-suite
	@$(MAKE) --no-print-directory asan CHECK_AGAIN=1
	@$(MAKE) --no-print-directory fuzz-smoke

# The asan flavour also checks the flow's undo trail against whole copies, and each parse edited
# from the unit before against a fresh one (KL_TRAIL_CHECK).
asan:
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=address,undefined \
	  OPT="-O1 -g -DKL_TRAIL_CHECK" test-suite

ubsan:
	@$(MAKE) --no-print-directory BUILD=build/ubsan SAN=undefined OPT="-O1 -g" test-suite

# Each harness in tests/fuzz for FUZZ_SECONDS, after replaying its regression inputs; fails on
# a crash, hang, leak or sanitizer report. Built with clang into build/fuzz.
fuzz:
	@tests/fuzz/run.sh --probe $(FUZZ_CC) || \
	  { echo "kernlint: $(FUZZ_CC) cannot link libFuzzer; run: make deps"; exit 2; }
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=$(FUZZ_CC) OPT="-O1 -g" \
	  SAN=fuzzer-no-link,address,undefined fuzz-run

# What check runs: 20 seconds of each harness, skipped (not failed) where libFuzzer is missing.
fuzz-smoke:
	@if tests/fuzz/run.sh --probe $(FUZZ_CC); then $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20; \
	else echo "SKIP fuzz-smoke: $(FUZZ_CC) cannot link libFuzzer (apt-get install clang libclang-rt-14-dev)"; fi

fuzz-run: deps-check $(FUZZ_NAMES:%=$(BUILD)/%)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(BUILD) $(FUZZ_NAMES)

# Fails on any valgrind report, a crash, or an exit status other than the one stated per run.
leakcheck:
	@$(MAKE) --no-print-directory BUILD=build/debug OPT="-O0 -g" deps-check build/debug/kernlint
	@tests/leakcheck.sh build/debug/kernlint

# The language server's long soak (tests/soak.test.sh with 10,000 edits), on the release and the
# ASan builds; the suite runs a short form of it.
soak:
	@$(MAKE) --no-print-directory deps-check $(BUILD)/kernlint
	@SOAK_EDITS=10000 tests/run.sh $(BUILD) tests/soak.test.sh
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=address,undefined \
	  OPT="-O1 -g -DKL_TRAIL_CHECK" build/asan/kernlint
	@SOAK_EDITS=10000 tests/run.sh build/asan tests/soak.test.sh

bench: all $(BUILD)/tools/bench
	@tests/bench.sh $(BUILD)

# Measure on real kernels (../corpus, or CORPUS=dir; built as ../shared/corpus/README.md says).
# Not part of check: CI has no corpus.
CORPUS ?= ../corpus
corpus-report: all $(BUILD)/tools/parse-stats $(BUILD)/tools/corpus-report $(BUILD)/tools/py-kernels
	@tests/corpus/report.sh $(BUILD) $(CORPUS)

# Every C source (tools, unit tests and fuzz harnesses too) through $(CC)'s front end with the
# build's flags and no code generation: tests/clang.test.sh runs it with CC=clang, so that what
# only gcc accepts fails the suite.
SYNTAX_SRCS = $(LIB_SRCS) analyzer/cli/main.c $(UNIT_SRCS) $(TOOL_SRCS) \
              $(wildcard tests/tools/msl2cl/*.c) $(FUZZ_SRCS)
syntax-check:
	@$(CC) $(CFLAGS_ALL) -fsyntax-only $(SYNTAX_SRCS)

# The rule pages, docs/rules/, written from the rules' own documentation (what --explain prints);
# they are committed, and tests/docs.test.sh fails when they differ from the program's.
docs: deps-check $(BUILD)/kernlint
	@docs/gen-rules.sh $(BUILD)/kernlint docs/rules

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/kernlint $(DESTDIR)$(PREFIX)/bin/kernlint
	install -m 644 kernlint.1 $(DESTDIR)$(PREFIX)/share/man/man1/kernlint.1

clean:
	rm -rf build/release build/release-pgo build/asan build/ubsan build/debug build/fuzz kernlint \
	  tests/out

-include $(LIB_OBJS:.o=.d) $(BUILD)/analyzer/cli/main.d $(PGO_OBJS:.o=.d)

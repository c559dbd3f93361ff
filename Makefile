# cfl: build, test, demo, bench.  `make demo` and `make test` do all the
# setup on a fresh Debian machine (see `deps`).

PREFIX   ?= /usr/local
CC       ?= cc
SANITIZE ?=
# Debian packages the build needs; `make deps` installs what is missing.
DEB_PKGS := pkg-config libopenblas-dev libpcre2-dev libsqlite3-dev libgsl-dev libssl-dev zlib1g-dev \
            libopenmpi-dev openmpi-bin sqlite3
# (sqlite3, the shell, is for the CLI tests that look into the database.)
TEST_PKGS := chromium slurm-wlm python3-optuna python3-sklearn python3-pandas
PC_PKGS  := openblas libpcre2-8 sqlite3 gsl libssl libcrypto zlib

ifeq ($(SANITIZE),)
BUILD    := build
BIN      := cfl
OPT      := -O2
else
# The sanitizer build keeps its objects and binary apart from the plain one.
BUILD    := build-san
BIN      := cfl-san
OPT      := -O1 -fno-omit-frame-pointer -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
endif

PC_CFLAGS := $(shell pkg-config --cflags $(PC_PKGS) 2>/dev/null)
# GSL's own CBLAS is left out: OpenBLAS provides the cblas_* symbols, and two
# CBLAS libraries in one binary would shadow each other.
PC_LIBS   := $(filter-out -lgslcblas,$(shell pkg-config --libs $(PC_PKGS) 2>/dev/null))

# MPI (Open MPI): built in when mpicc (or pkg-config ompi-c) finds it and its
# mpi.h is there; left out cleanly otherwise, or with `make NO_MPI=1`.  Only
# src/run/mpi.c sees the MPI flags (it alone includes mpi.h).
ifeq ($(NO_MPI),)
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null || pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null || pkg-config --libs ompi-c 2>/dev/null)
HAVE_MPI   := $(if $(MPI_LIBS),$(firstword $(wildcard $(patsubst -I%,%/mpi.h,$(filter -I%,$(MPI_CFLAGS))) /usr/include/mpi.h)))
endif
ifeq ($(HAVE_MPI),)
MPI_CFLAGS :=
MPI_LIBS   :=
endif
# Switching MPI on or off rebuilds mpi.o (the stamp's name changes).
MPI_STAMP := $(BUILD)/.mpi-$(if $(HAVE_MPI),on,off)

CFLAGS  ?= -g
ALL_CFLAGS  = -std=c11 -D_GNU_SOURCE $(OPT) $(CFLAGS) -Wall -Wextra -Iinclude $(PC_CFLAGS) -MMD -MP
ALL_LDFLAGS = $(OPT) $(LDFLAGS)
LIBS    = $(PC_LIBS) $(MPI_LIBS) -lm -lpthread
LINK_LIB = $(BUILD)/libcfl.a

LIB_SRC := $(sort $(wildcard src/core/*.c src/data/*.c src/models/*.c src/metrics/*.c \
             src/hpo/*.c src/run/*.c src/store/*.c src/ensemble/*.c src/report/*.c \
             src/study/*.c))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC   := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC   := $(sort $(wildcard tests/fuzz/fuzz_*.c))
REPLAY_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/replay_%)

.PHONY: all deps test-deps demo test unit-tests cli-tests fuzz-replay fuzz bench bench-build bench-deps install uninstall clean

all: $(BIN) $(BUILD)/cfl.1 $(BUILD)/cfl.bash

$(BUILD)/libcfl.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/libcfl.a $(CLI_OBJ)
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(LINK_LIB) $(LIBS)

# fcnn's element-wise loops (bias, ReLU, optimiser updates) must vectorise
# to keep sgemm the bottleneck; sqrtf without errno lets the updates vectorise.
$(BUILD)/src/models/fcnn.o: ALL_CFLAGS += -O3 -fno-math-errno

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/src/run/mpi.o: ALL_CFLAGS += $(MPI_CFLAGS) $(if $(HAVE_MPI),-DCFL_HAVE_MPI)
$(BUILD)/src/run/mpi.o: $(MPI_STAMP)
$(MPI_STAMP):
	@mkdir -p $(BUILD)
	@rm -f $(BUILD)/.mpi-*
	@touch $@

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/tests/runner.o $(BUILD)/libcfl.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(BUILD)/tests/runner.o $(LINK_LIB) $(LIBS)

$(BUILD)/tests/runner.o: tests/unit/runner.c tests/unit/runner.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -c -o $@ $<

# A small program that checks the MPI transport alone under mpirun
# (tests/cli/test_mpi.sh runs it).
$(BUILD)/tests/mpi_selftest: tests/mpi/mpi_selftest.c $(BUILD)/libcfl.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LINK_LIB) $(LIBS)

# No-op trial throughput through the MPI backend (tests/bench/bench_mpi.sh).
$(BUILD)/tests/mpi_bench: tests/bench/mpi_bench.c $(BUILD)/libcfl.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LINK_LIB) $(LIBS)

# CLI test helpers (tests/cli/fixture_*.c): small programs on libcfl.a.
$(BUILD)/tests/fixture_%: tests/cli/fixture_%.c $(BUILD)/libcfl.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LINK_LIB) $(LIBS)

$(BUILD)/tests/gen_models_md: tests/docs/gen_models_md.c $(BUILD)/libcfl.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LINK_LIB) $(LIBS)

$(BUILD)/tests/replay_%: tests/fuzz/%.c tests/fuzz/replay.c $(BUILD)/libcfl.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< tests/fuzz/replay.c $(LINK_LIB) $(LIBS)

# ---- setup ----

# Installs the Debian packages named in $(1) that are missing (as root), or
# says how to.
define apt_install
	@missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "$@: installing$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q -o DPkg::Lock::Timeout=900 $$missing >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null && apt-get install -y -q -o DPkg::Lock::Timeout=900 $$missing; } || exit 1; \
	  else \
	    echo "$@: missing Debian packages; run:"; \
	    echo "  sudo apt-get install -y$$missing"; \
	    exit 1; \
	  fi; \
	fi
endef

deps:
	$(call apt_install,$(DEB_PKGS))

# What tests need beyond the build: chromium renders the HTML report
# (test_report_html.sh), slurm-wlm runs a one-node Slurm (test_mpi.sh),
# python3-optuna loads `cfl export --format optuna` studies (test_export.sh),
# with python3-sklearn for its importances and python3-pandas for its
# trials_dataframe and the exports read with parse_dates.
test-deps:
	$(call apt_install,$(TEST_PKGS))

# `deps` runs first, in its own make, so the pkg-config flags read above are
# read again once the packages are there.
# The demo's models: every model built in among these (fcnn and the trees
# join as their files land).
empty :=
space := $(empty) $(empty)
comma := ,
DEMO_MODELS = $(subst $(space),$(comma),$(strip $(foreach m,linear fcnn tree,$(if $(wildcard src/models/$(m)*.c),$(m)))))
demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all
	./cfl repeat datasets/iris.csv --num-repeat 3 --models $(DEMO_MODELS)

# Every suite runs (-k) and ends with "N passed, N failed, N skipped"; the
# last line adds them up (a failure outside any suite, such as a build
# error, is said so: the suites' counts would not show it).
TEST_SUM := /^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$$/ { p += $$1; f += $$3; s += $$5 } \
	END { print "== total"; printf "%d passed, %d failed, %d skipped\n", p, f, s; \
	      if (rc && !f) print "(and a step outside the suites failed: see above)" }
# The bit-for-bit figures of the fcnn tests were taken with OpenBLAS's
# Haswell kernels: on a CPU with AVX2 and FMA the tests ask for those (cfl
# itself runs the best kernels the CPU has; tests/cli/test_main.sh checks).
TEST_CORETYPE := $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && echo Haswell)
ifneq ($(TEST_CORETYPE),)
test unit-tests cli-tests: export OPENBLAS_CORETYPE ?= $(TEST_CORETYPE)
endif
test:
	@$(MAKE) --no-print-directory deps test-deps
	@$(MAKE) --no-print-directory all
	@mkdir -p $(BUILD)
	@{ $(MAKE) --no-print-directory -k unit-tests fuzz-replay cli-tests bench-build; \
	   echo $$? >$(BUILD)/test.rc; } 2>&1 | tee $(BUILD)/test.log
	@rc=$$(cat $(BUILD)/test.rc); awk -v rc=$$rc '$(TEST_SUM)' $(BUILD)/test.log; exit $$rc

unit-tests: $(UNIT_BIN)
	@fail=0; for t in $(UNIT_BIN); do echo "== $$t"; $$t || fail=1; done; exit $$fail

fuzz-replay: $(REPLAY_BIN)
	@fail=0; for t in $(REPLAY_BIN); do \
	  name=$${t##*/replay_fuzz_}; echo "== replay $$name"; \
	  $$t tests/fuzz/corpus/$$name || fail=1; done; exit $$fail

CLI_HELPERS := $(patsubst tests/cli/%.c,$(BUILD)/tests/%,$(wildcard tests/cli/fixture_*.c))
# docs/models.md's parameter tables come from the models' schemas (make docs);
# tests/cli/test_docs.sh checks the page is up to date.
CLI_HELPERS += $(BUILD)/tests/gen_models_md
cli-tests: $(BIN) $(BUILD)/cfl.1 $(BUILD)/cfl.bash $(CLI_HELPERS) $(BUILD)/tests/mpi_selftest
	@CFL=./$(BIN) CFL_BUILD=$(BUILD) bash tests/cli/run.sh

# Real fuzzing with libFuzzer (clang and Debian's libclang-rt-14-dev):
#   make fuzz FUZZ=csv SECONDS=60
FUZZ ?= csv
SECONDS ?= 60
fuzz:
	@dpkg-query -W -f='$${Status}' clang libclang-rt-14-dev 2>/dev/null | grep -c 'install ok installed' | grep -q 2 || \
	  { [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang libclang-rt-14-dev >/dev/null; } || \
	  { echo "fuzz: needs: sudo apt-get install -y clang libclang-rt-14-dev"; exit 1; }
	@mkdir -p build-fuzz/corpus-$(FUZZ)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude $(PC_CFLAGS) \
	  -o build-fuzz/fuzz_$(FUZZ) tests/fuzz/fuzz_$(FUZZ).c $(LIB_SRC) $(LIBS)
	build-fuzz/fuzz_$(FUZZ) -max_total_time=$(SECONDS) build-fuzz/corpus-$(FUZZ) tests/fuzz/corpus/$(FUZZ)

# ---- benchmarks ----

# The C drivers of the benchmarks, linked like cfl itself (libcfl.a,
# every library libcfl.a needs, MPI when built in), so no bench script keeps
# its own link line.  sgemm_w1 (plain OpenBLAS) and mpi_bench have their own.
BENCH_DRIVERS := pool_bench store_bench tcp_bench w3_bench w4_driver
$(BUILD)/bench-bin/%: tests/bench/%.c $(BUILD)/libcfl.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LINK_LIB) $(LIBS)

# make test builds every driver, so an API change cannot break the
# benchmarks unseen.
bench-build: $(addprefix $(BUILD)/bench-bin/,$(BENCH_DRIVERS)) $(BUILD)/tests/mpi_bench


# What the bench scripts run: the peers (each script times itself, so no
# timing tool is installed), and R with the mlbench and MASS packages, whose
# real data sets tests/bench/make_real.R writes for bench_auto.sh.
BENCH_PKGS := python3-sklearn python3-torch python3-xgboost python3-optuna python3-pandas \
	r-base-core r-cran-mlbench r-cran-mass
bench-deps:
	@missing=""; \
	for p in $(BENCH_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=900 $$missing >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; } || exit 1; \
	  else echo "bench: run: sudo apt-get install -y$$missing"; exit 1; fi; \
	fi

# make bench QUICK=1: the same tables on fewer repeats (budget: 3 minutes;
# run.sh says whether a run met it);
# make bench BENCH=w4: one script (tests/bench/bench_w4.sh).
QUICK ?= 0
bench:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory bench-deps
	@$(MAKE) --no-print-directory all
	QUICK=$(QUICK) bash tests/bench/run.sh

# ---- docs ----

.PHONY: docs
# Rewrites the parameter tables of docs/models.md from the models' own schemas.
docs: $(BUILD)/tests/gen_models_md
	$(BUILD)/tests/gen_models_md docs/models.md >docs/models.md.tmp && mv docs/models.md.tmp docs/models.md || \
	  { rm -f docs/models.md.tmp; exit 1; }

# ---- install ----

# The man page and the bash completion are generated from the binary's own
# --help and --version, so they cannot drift from it.
$(BUILD)/cfl.1: $(BIN) tools/gen-man.sh
	@mkdir -p $(dir $@)
	sh tools/gen-man.sh ./$(BIN) > $@.tmp && mv $@.tmp $@
$(BUILD)/cfl.bash: $(BIN) tools/gen-completion.sh
	@mkdir -p $(dir $@)
	sh tools/gen-completion.sh ./$(BIN) > $@.tmp && mv $@.tmp $@

MAN_DIR  = $(DESTDIR)$(PREFIX)/share/man/man1
COMP_DIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions

install: cfl build/cfl.1 build/cfl.bash
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/cfl/params $(MAN_DIR) $(COMP_DIR)
	install -m 0755 cfl $(DESTDIR)$(PREFIX)/bin/cfl
	cp -r params/. $(DESTDIR)$(PREFIX)/share/cfl/params/
	install -m 0644 build/cfl.1 $(MAN_DIR)/cfl.1
	install -m 0644 build/cfl.bash $(COMP_DIR)/cfl

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/cfl $(MAN_DIR)/cfl.1 $(COMP_DIR)/cfl
	rm -rf $(DESTDIR)$(PREFIX)/share/cfl

clean:
	rm -rf build build-san build-fuzz cfl cfl-san

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(wildcard $(BUILD)/tests/*.d $(BUILD)/bench-bin/*.d)

# duet's front door: `make test` and `make train` set everything up from a fresh clone.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

CONFIGURE_ARGS = -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)
# CMake runs only when it must: for a new build folder, or other arguments than last time. A
# changed CMakeLists.txt needs no configure from here: the build re-runs CMake itself (ninja
# checks every file CMake read). ARGS_STAMP holds the arguments, rewritten only when they
# change; CONFIGURED is touched after each configure that succeeded.
ARGS_STAMP = $(BUILD_DIR)/.make-configure-args
CONFIGURED = $(BUILD_DIR)/.make-configured

.PHONY: all deps configure build test train bench clean FORCE

all: build

deps:
	@scripts/install-deps.sh

# Through the environment, so that no quote in CMAKE_FLAGS can break the shell line.
$(ARGS_STAMP): export DUET_CONFIGURE_ARGS = $(CONFIGURE_ARGS)
$(ARGS_STAMP): FORCE
	@mkdir -p $(BUILD_DIR)
	@printf '%s\n' "$$DUET_CONFIGURE_ARGS" | cmp -s - $@ || printf '%s\n' "$$DUET_CONFIGURE_ARGS" > $@

define run_cmake
	@rm -f $(CONFIGURED)
	@cmake -S . -B $(BUILD_DIR) $(CONFIGURE_ARGS) > $(BUILD_DIR).configure.log \
	  || { cat $(BUILD_DIR).configure.log; exit 1; }
	@grep -E "duet: CUDA" $(BUILD_DIR).configure.log || true
	@touch $(CONFIGURED)
endef

$(CONFIGURED): $(ARGS_STAMP) | deps
	$(run_cmake)

# Configures even when nothing changed (say, after installing the CUDA toolkit).
configure: $(ARGS_STAMP) | deps
	$(run_cmake)

build: $(CONFIGURED)
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The whole suite: CPU tests, and the CUDA tests (reported as Skipped without a GPU).
test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# Only the CLI and the library it links: the tests are not needed to train.
train: $(CONFIGURED)
	cmake --build $(BUILD_DIR) -j $(JOBS) --target duet_cli
	$(BUILD_DIR)/apps/duet train $(ARGS)

# duet against PyTorch on this machine's CPU (docs/performance.md); ARGS=--strategies adds duet compare.
bench: $(CONFIGURED)
	@bench/cpu/setup.sh
	cmake --build $(BUILD_DIR) -j $(JOBS) --target duet_bench gemm_peak duet_cli core_latency
	/usr/bin/python3 bench/cpu/run.py --build-dir $(BUILD_DIR) $(ARGS)

clean:
	rm -rf $(BUILD_DIR) $(BUILD_DIR).configure.log

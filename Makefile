# duet's front door: `make test` and `make train` set everything up from a fresh clone.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test train bench clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) > $(BUILD_DIR).configure.log \
	  || { cat $(BUILD_DIR).configure.log; exit 1; }
	@grep -E "duet: CUDA" $(BUILD_DIR).configure.log || true

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The whole suite: CPU tests, and the CUDA tests (reported as Skipped without a GPU).
test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

train: build
	$(BUILD_DIR)/apps/duet train $(ARGS)

# duet against PyTorch on this machine's CPU (docs/performance.md); ARGS=--strategies adds duet compare.
bench: configure
	@bench/setup.sh
	cmake --build $(BUILD_DIR) -j $(JOBS) --target duet_bench gemm_peak duet_cli
	/usr/bin/python3 bench/run.py --build-dir $(BUILD_DIR) $(ARGS)

clean:
	rm -rf $(BUILD_DIR) $(BUILD_DIR).configure.log

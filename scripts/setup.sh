#!/usr/bin/env bash
# Installs everything a fresh build machine needs to build adamant's PTX, link cust without a GPU
# and validate the PTX with ptxas. Idempotent: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

# The nightly whose NVPTX backend we build with (see crates/adamant-build/src/toolchain.rs for the pinned commit).
rustup component add rust-src --toolchain nightly >/dev/null
# The default toolchain's linters, which CI runs before the tests.
rustup component add rustfmt clippy >/dev/null

# cust links -lcuda. Debian's real driver library lives in the non-free component.
if [ ! -e /usr/lib/x86_64-linux-gnu/libcuda.so ]; then
  if [ ! -f /etc/apt/sources.list.d/adamant-nonfree.sources ]; then
    cat > /etc/apt/sources.list.d/adamant-nonfree.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libcuda1 >/dev/null
fi
# find_cuda_helper wants a folder with lib64/ in it; .cargo/config.toml points CUDA_LIBRARY_PATH here.
mkdir -p .cuda-stub/lib64
ln -sf /usr/lib/x86_64-linux-gnu/libcuda.so .cuda-stub/lib64/libcuda.so

# ptxas for the offline PTX validation (tests and `adamant audit` use it).
if ! python3 -c 'import nvidia.cu13' 2>/dev/null || [ ! -x "$(python3 -c 'import nvidia.cu13,os;print(os.path.join(nvidia.cu13.__path__[0],"bin","ptxas"))' 2>/dev/null)" ]; then
  python3 -m pip install -q --disable-pip-version-check "nvidia-cuda-nvcc==13.5.37"
fi
echo "setup: ok (nightly rust-src, libcuda1, ptxas $(scripts/ptxas-path.sh))"

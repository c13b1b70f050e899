#!/usr/bin/env bash
# Prints the path of the ptxas installed by scripts/setup.sh (PyPI wheel nvidia-cuda-nvcc).
python3 - <<'PY'
import os, nvidia.cu13 as m
print(os.path.join(m.__path__[0], "bin", "ptxas"))
PY

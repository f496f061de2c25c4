#!/bin/sh
# Test double for nvidia-smi: one healthy A10G, or a device error while FAKE_GPU_FAIL_FILE exists.
if [ -n "${FAKE_GPU_FAIL_FILE:-}" ] && [ -e "${FAKE_GPU_FAIL_FILE}" ]; then
    echo "Unable to determine the device handle for GPU 00000000:00:1E.0: Unknown Error" >&2
    exit 255
fi
echo "NVIDIA A10G, 23028 MiB, 570.172.08"

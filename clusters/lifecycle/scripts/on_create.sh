#!/bin/bash
# InstantStart lifecycle script for SageMaker HyperPod nodes orchestrated by Amazon EKS (the OnCreate entry point).
#
# HyperPod runs it as root on every new or replaced instance, before the node joins the EKS cluster; a non-zero
# exit fails the instance's provisioning, so only what must succeed is fatal. The EKS node bootstrap itself
# (kubelet, containerd, the HyperPod health agents) is done by HyperPod's AMI: this script only prepares the host.
set -euo pipefail

LOG_DIR=/var/log/provision
mkdir -p "$LOG_DIR"
exec > >(tee -a "$LOG_DIR/provisioning.log") 2>&1
echo "[instantstart] on_create started at $(date --iso-8601=seconds) on $(hostname)"

# Large container images (CUDA, NCCL, frameworks) outgrow the root volume: keep containerd's and kubelet's data on
# the largest local disk — the NVMe instance store when the type has one, else the group's secondary EBS volume
# that HyperPod mounts at /opt/sagemaker.
pick_data_dir() {
  for candidate in /opt/dlami/nvme /opt/sagemaker; do
    if mountpoint -q "$candidate"; then
      echo "$candidate"
      return
    fi
  done
}

relocate() {
  local source=$1 target=$2
  mkdir -p "$source" "$target"
  if mountpoint -q "$source"; then
    echo "[instantstart] $source is already a mount point; leaving it"
    return
  fi
  if [ -n "$(ls -A "$source")" ]; then
    cp -a "$source/." "$target/"
  fi
  mount --bind "$target" "$source"
  echo "$target $source none bind 0 0" >> /etc/fstab
  echo "[instantstart] $source now lives on $target"
}

DATA_DIR=$(pick_data_dir || true)
if [ -n "${DATA_DIR:-}" ]; then
  # Services that were running are stopped while their data moves and started again afterwards.
  RUNNING=()
  for service in kubelet containerd; do
    if systemctl is-active --quiet "$service" 2>/dev/null; then
      RUNNING+=("$service")
      systemctl stop "$service"
    fi
  done
  relocate /var/lib/containerd "$DATA_DIR/containerd"
  relocate /var/lib/kubelet/pods "$DATA_DIR/kubelet-pods"
  for (( index=${#RUNNING[@]}-1; index>=0; index-- )); do
    systemctl start "${RUNNING[$index]}"
  done
else
  echo "[instantstart] no instance store or secondary volume mounted; container data stays on the root volume"
fi

# Distributed training opens many files and pins memory (EFA, NCCL): lift the limits for every process.
cat > /etc/security/limits.d/90-instantstart.conf <<'LIMITS'
* soft nofile 1048576
* hard nofile 1048576
* soft memlock unlimited
* hard memlock unlimited
LIMITS

echo "[instantstart] on_create finished at $(date --iso-8601=seconds)"

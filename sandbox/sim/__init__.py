"""The simulator: the controllers that make the sandbox's clusters move.

``runtime.Simulator`` runs one background thread that passes over every EKS cluster of the AWS world and
runs each controller (one module each) against that cluster's emulator store:

- ``nodes``: HyperPod instances as labelled, Ready Nodes; reboot/replace through the health label;
- ``deployments``, ``replicasets``, ``statefulsets``, ``daemonsets``: workload pods and their status;
- ``jobs``: batch Jobs that complete (or fail, on request); ``downloads``: model download Jobs writing S3;
- ``taskgovernance``: the Kueue objects of HyperPod task governance's policies and Kueue's admission, borrowing
  and preemption of HyperPodPyTorchJobs;
- ``pytorchjobs``: HyperPodPyTorchJobs with per-rank training logs, restarts, hang and slow detection
  (``training``, ``logmonitor``);
- ``rayjobs``: RayJobs with a RayCluster and driver logs;
- ``inference``: InferenceEndpointConfigs that deploy a model and become ready;
- ``scaledobjects``: KEDA ScaledObjects with their HPA;
- ``volumes``: PersistentVolumeClaims binding to (or provisioning) volumes;
- ``pods``: the kubelet and the scheduler's binding (``scheduler``), ``services``: LB hostnames and Endpoints;
- ``devices``: the GPUs, EFA interfaces and Neuron devices a HyperPod node advertises while their device plugin's
  pod runs on it.

All durations are nominal seconds passed through ``sandbox.clock``. Objects the simulator creates carry a
controller ``ownerReference`` to what caused them, so deleting the cause deletes them.
"""

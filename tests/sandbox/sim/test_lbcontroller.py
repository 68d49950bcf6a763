"""The AWS Load Balancer Controller's pods start only with EKS Pod Identity credentials, and a load balancer
Service handed to the controller gets its hostname only while the controller runs."""

from __future__ import annotations

from kubernetes import client as k8s

from tests.sandbox.sim.harness import client, make_cluster, wait_for

CONTROLLER = "aws-load-balancer-controller"
LABELS = {"app.kubernetes.io/name": CONTROLLER}


def test_the_controller_crash_loops_without_credentials_and_serves_load_balancers_with_them():
    api = make_cluster(addons=("eks-pod-identity-agent",), device_plugins=False)
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    container = {"name": CONTROLLER, "image": "public.ecr.aws/eks/aws-load-balancer-controller:v3.5.0"}
    core.create_namespaced_service_account("kube-system", {"metadata": {"name": CONTROLLER}})
    apps.create_namespaced_deployment("kube-system", {"metadata": {"name": CONTROLLER, "labels": LABELS}, "spec": {
        "replicas": 1, "selector": {"matchLabels": LABELS}, "template": {"metadata": {"labels": LABELS}, "spec": {
            "serviceAccountName": CONTROLLER, "containers": [container]}}}})
    core.create_namespaced_service("default", {"metadata": {"name": "chat", "annotations": {
        "service.beta.kubernetes.io/aws-load-balancer-type": "external"}}, "spec": {
        "type": "LoadBalancer", "selector": {"app": "chat"}, "ports": [{"port": 80, "targetPort": 8000}]}})

    def controller_pod():
        return core.list_namespaced_pod("kube-system", label_selector=f"app.kubernetes.io/name={CONTROLLER}").items

    crashing = wait_for(controller_pod, lambda pods: pods and pods[0].status.container_statuses and (
        pods[0].status.container_statuses[0].restart_count or 0) >= 2)[0]
    assert crashing.status.container_statuses[0].state.waiting.reason == "CrashLoopBackOff"
    log = core.read_namespaced_pod_log(crashing.metadata.name, "kube-system", previous=True)
    assert "unable to initialize AWS cloud" in log and f"no EKS Pod Identity association for kube-system/{CONTROLLER}" \
        in log
    assert not apps.read_namespaced_deployment(CONTROLLER, "kube-system").status.available_replicas
    assert not core.read_namespaced_service("chat", "default").status.load_balancer.ingress

    client("eks").create_pod_identity_association(
        clusterName="demo", namespace="kube-system", serviceAccount=CONTROLLER,
        roleArn="arn:aws:iam::123456789012:role/load-balancer-controller")
    wait_for(lambda: apps.read_namespaced_deployment(CONTROLLER, "kube-system").status.available_replicas)
    service = wait_for(lambda: core.read_namespaced_service("chat", "default"),
                       lambda found: found.status.load_balancer.ingress)
    assert service.status.load_balancer.ingress[0].hostname.startswith("k8s-default-chat-")

"""Permission-matrix cases of the MLflow slice: tracking servers and a job's metrics (added to tests.matrix.CASES)."""

from tests.matrix import ADMINS, AUTHENTICATED, MEMBERS, Case


def sandbox_server(name: str = "matrix", *, team=None) -> str:
    """A running tracking server made directly in the sandbox (as someone outside InstantStart would); its ARN. With
    ``team``, it carries the tag ``instantstart:team=<slug>`` that lets the team's admins attach it."""
    from cloud import aws
    from clusters.ownership import TEAM_TAG
    from tests.clusters.sandbox import instant_clock

    sagemaker = aws.client("sagemaker", region="us-west-2")
    with instant_clock():
        found = [s for s in sagemaker.list_mlflow_tracking_servers()["TrackingServerSummaries"]
                 if s["TrackingServerName"] == name]
        if not found:
            sagemaker.create_mlflow_tracking_server(
                TrackingServerName=name, ArtifactStoreUri="s3://outside-bucket/mlflow",
                RoleArn="arn:aws:iam::123456789012:role/outside-mlflow")
        arn = sagemaker.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerArn"]
    if team is not None:
        sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": TEAM_TAG, "Value": team.slug}])
    return arn


def server_row(*, cloud: bool = False):
    """Path parameters naming an attached, ready tracking server row of the cast's team (in the sandbox too when
    ``cloud``)."""

    def params(cast, actor) -> dict:
        from training.models import TrackingServer

        arn = (sandbox_server() if cloud else
               "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/matrix")
        server, _ = TrackingServer.objects.get_or_create(team=cast.team, region="us-west-2", defaults={
            "name": "matrix", "arn": arn, "state": "ready", "managed": False, "status": "Created"})
        return {"server_id": server.pk}

    return params


def attach_body(cast, actor) -> dict:
    return {"team": cast.team.pk, "arn": sandbox_server(team=cast.team)}


def job_of_team(cast, actor) -> dict:
    from tests.clusters.sandbox import tracked_hyperpod_cluster
    from tests.matrix_training import make_job

    return {"job_id": make_job(tracked_hyperpod_cluster(cast.team, cloud=False), state="running").pk}


CASES = [
    Case("mlflow_servers_list", AUTHENTICATED, team_scoped=False),
    # sandbox: the dry run's plan reads IAM and SageMaker (whether the role and the server exist)
    Case("mlflow_servers_create", ADMINS, body=lambda cast, actor: {"team": cast.team.pk, "region": "us-west-2"},
         sandbox=True),
    Case("mlflow_servers_attach", ADMINS, body=attach_body, sandbox=True),
    Case("mlflow_servers_retrieve", MEMBERS, params=server_row()),
    Case("mlflow_servers_destroy", ADMINS, params=server_row()),
    Case("mlflow_servers_ui_url", ADMINS, params=server_row(cloud=True), sandbox=True),
    Case("training_job_metrics_retrieve", MEMBERS, params=job_of_team),
]

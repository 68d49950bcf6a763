"""Training-job diagnostics REST endpoint (read-only): the NCCL/EFA diagnosis of a job
(``training.diagnostics.nccl``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from clusters.api.diagnostic_serializers import DiagnosisSerializer
from training.diagnostics.selectors import job_diagnosis


class TrainingJobDiagnosisView(APIView):
    @extend_schema(operation_id="training_jobs_diagnose", responses={200: DiagnosisSerializer}, tags=["diagnostics"])
    def get(self, request, job_id: int):
        """Diagnose a training job's NCCL/EFA problems (read-only): NCCL and libfabric errors in the ranks' logs,
        EFA interfaces requested vs advertised on their nodes, the NCCL_*/FI_* environment, placement across zones
        and instance groups, stragglers; suggestions escalate investigate → retry → reboot → replace."""
        return Response(job_diagnosis(actor=request.user, job_id=job_id).as_dict())

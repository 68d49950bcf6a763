"""The Kubernetes API emulator: one virtual API server per EKS cluster of the AWS sandbox.

``server.start(host, port, clusters, identify)`` serves them over HTTPS under ``/clusters/<region>/<cluster>``;
``world`` is the in-process API the simulator and the AWS side use (stores, CRDs, add-on sync, logs).
Layers, bottom up: ``errors``/``meta`` (Status bodies, metadata rules), ``resources``/``builtins``
(served types), ``modelschema``/``schema``/``validation``/``defaults``/``customresources`` (admission),
``store``/``writes``/``logs`` (state and write semantics), ``selectors``/``patch``, ``crds`` (reference CRD
files and add-on mapping), ``routing``/``discovery``/``handlers``/``podlogs``/``streams``/``app`` (HTTP),
``auth``/``access``/``policies``/``rbac`` (EKS authentication and authorization).
"""

"""The sandbox's AWS: moto in server mode behind our extensions, faults, request log and control API.

``server.start(host, port)`` serves it; ``world`` is the in-process view the emulator and the simulator use.
Extensions (one module per service area) answer the operations moto lacks or gets wrong; everything else is
moto's. See docs/sandbox-aws.md.
"""

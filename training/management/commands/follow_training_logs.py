"""``manage.py follow_training_logs``: the log-follower process (``training.logs.runner``); stops on SIGTERM/SIGINT."""

from __future__ import annotations

import signal

from django.core.management.base import BaseCommand

from training.logs.runner import SCAN_SECONDS, Runner


class Command(BaseCommand):
    help = "Follow the pod logs of every running training job (one follower per job across processes)."

    def add_arguments(self, parser):
        parser.add_argument("--scan-seconds", type=float, default=SCAN_SECONDS,
                            help="How often to look for jobs to follow.")

    def handle(self, *args, **options):
        runner = Runner(scan_seconds=options["scan_seconds"])
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: runner.shutdown())
        self.stdout.write("following training job logs")
        runner.run()
        self.stdout.write("stopped")

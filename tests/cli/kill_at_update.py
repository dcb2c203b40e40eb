#!/usr/bin/env python3
"""Runs a `tfm train` command and kill -9s it as soon as its log reports update K.

The log is read through a pipe as tfm writes it (spdlog flushes every line), so the kill lands
within microseconds of the progress line, whatever the machine's speed: right where the trainer
writes that update's checkpoint when it saves every update. The whole log is copied to --log.

Exit status: 0 when the run was killed at update K; 3 when it ended on its own before the kill
(it never logged update K, or it finished first), so the caller can say that it could not test.
"""
import argparse
import re
import signal
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--update", type=int, required=True, help="kill once this update is logged")
    parser.add_argument("--log", required=True, help="where the run's stderr is copied")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the tfm command line")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    progress = re.compile(rb"\| update (\d+) \|")
    with open(args.log, "wb") as log:
        run = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
        killed_at = None
        for line in run.stderr:
            log.write(line)
            match = progress.search(line)
            if killed_at is None and match and int(match.group(1)) >= args.update:
                run.send_signal(signal.SIGKILL)
                killed_at = int(match.group(1))
        code = run.wait()
    if killed_at is not None and code == -signal.SIGKILL:
        print(f"killed at update {killed_at}")
        return 0
    print(f"the run ended by itself (exit {code}) before update {args.update} was logged and killed",
          file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())

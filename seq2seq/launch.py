"""`python -m seq2seq.launch TORCHRUN-ARGS`: torchrun (`torch.distributed.run`) with the very same
arguments, except that a rendezvous that never completes is one line and exit status 2, as every
other failure to start is, instead of torchrun's traceback, and a training process that stops on
bad input (its one line said) ends the launcher with its status, not torchrun's failure report.

With several machines, each agent waits at the rendezvous for the others (`--rdzv-conf
join_timeout=S`, 600 s by default); a node that never comes (not started, another `--rdzv-id`, a
firewall) ends that wait, before any training process has started or written anything.
"""

import sys

from seq2seq.errors import first_line


def main(argv: list[str] | None = None) -> int:
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous.api import RendezvousError, RendezvousTimeoutError

    args = torchrun.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        torchrun.run(args)
    except RendezvousTimeoutError:
        sys.stderr.write(
            f"error: the rendezvous {args.rdzv_id!r} at {args.rdzv_endpoint} did not gather its "
            f"{args.nnodes} nodes within its join timeout; start the same command on every node "
            "(the same --rdzv-id and --rdzv-endpoint), or raise --rdzv-conf join_timeout=SECONDS\n"
        )
        return 2
    except ChildFailedError as e:  # a process stopped: it has said why (one line for bad input)
        return min(failure.exitcode for failure in e.failures.values()) or 1
    except RendezvousError as e:  # closed, or its store unreachable
        sys.stderr.write(f"error: the rendezvous at {args.rdzv_endpoint} failed ({first_line(e)})\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

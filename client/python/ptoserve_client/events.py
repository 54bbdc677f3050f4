"""An event record in the words ptoctl prints it (proto/words.h's
EventText): one line for the instruction, one per micro-op and per note
under it."""

from ptoserve.v1 import job_pb2

__all__ = ["event_text", "duration_text"]

_UNITS = (("s", 10**9), ("ms", 10**6), ("us", 10**3))


def duration_text(ns: int) -> str:
    """A duration as Abseil's FormatDuration writes one under a minute:
    "941ns", "12.474us", "1.5ms", "2s" (the largest unit it is at least
    one of, with the fraction's digits that are not zero)."""
    if ns == 0:
        return "0"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    for unit, size in _UNITS:
        if ns >= size:
            whole, frac = divmod(ns, size)
            digits = str(frac).rjust(len(str(size)) - 1, "0").rstrip("0")
            return f"{sign}{whole}{'.' + digits if digits else ''}{unit}"
    return f"{sign}{ns}ns"


def _between(a, b) -> int:
    return (b.seconds - a.seconds) * 10**9 + (b.nanos - a.nanos)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def event_text(event: job_pb2.EventRecord) -> str:
    """`event` as ptoctl prints it under "events:", each line ending in a
    newline."""
    opcode = job_pb2.Opcode.Name(event.opcode).removeprefix("OPCODE_")
    target = job_pb2.Target.Name(event.target).removeprefix("TARGET_").lower()
    line = (f"  {event.id:<4} instruction {event.instruction_index} {opcode} "
            f"on {target}, {job_pb2.Pipe.Name(event.pipe)}, "
            f"batch {event.batch_id} (size {event.batch_size}), "
            f"queued {duration_text(_between(event.enqueue_time, event.start_time))}, "
            f"ran {duration_text(_between(event.start_time, event.end_time))}")
    if event.waited_on:
        line += ", waited on " + ", ".join(event.waited_on)
    lines = [line]
    for op in event.trace:
        lines.append(f"       {op.op:<5} {op.dst} <- {', '.join(op.srcs)}  "
                     f"({_count(op.repeats, 'repeat')}, "
                     f"{_count(op.elements, 'element')})")
    lines.extend(f"       note: {note}" for note in event.notes)
    return "".join(line + "\n" for line in lines)

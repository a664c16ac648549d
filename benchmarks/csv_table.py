"""The rows of a CSV table the benchmarks keep by hand (``real_engines_labels.csv``, the
expectations of ``real_engine_runs/``): its header checked, blank rows skipped, each row with
where it is and its cells stripped. Standard library only."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence


def rows(
    text: str, source: str, columns: Sequence[str], error: type[Exception]
) -> Iterator[tuple[str, list[str]]]:
    """Each row after the header as (``source:ROW``, its cells stripped), the header being row
    1; ``error`` with that place for a header other than ``columns`` or a row with another
    number of cells."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(cell.strip() for cell in header) != tuple(columns):
        raise error(f"{source}:1: the header must be {','.join(columns)}")
    for number, cells in enumerate(reader, start=2):
        if not cells or all(not cell.strip() for cell in cells):
            continue
        where = f"{source}:{number}"
        if len(cells) != len(columns):
            raise error(f"{where}: {len(cells)} columns, expected {len(columns)}")
        yield where, [cell.strip() for cell in cells]

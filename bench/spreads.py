"""Write `sizing/data/residual_spreads.csv`: the calibration's error spread per regime.

    python -m bench.spreads [--check]

Run it after a change to the model or to `sizing/data/measurements.csv` (the test
tests/sizing/test_residual_spreads.py fails until it is run); --check only says whether the
file is current.
"""

from __future__ import annotations

import argparse
import sys

from gpuscout.sizing.spreads import current_text
from gpuscout.sizing.uncertainty import RESIDUAL_SPREADS_CSV


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    text = current_text()
    stored = RESIDUAL_SPREADS_CSV.read_text("utf-8") if RESIDUAL_SPREADS_CSV.exists() else ""
    if args.check:
        print("current" if text == stored else f"{RESIDUAL_SPREADS_CSV} is not current")
        return 0 if text == stored else 1
    RESIDUAL_SPREADS_CSV.write_text(text, encoding="utf-8")
    print(text, end="")
    print(f"wrote {RESIDUAL_SPREADS_CSV}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The last word before the wire: the per-peer guard and the fail-static withdrawal hold (pure)."""

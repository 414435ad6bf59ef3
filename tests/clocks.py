"""A clock tests set by hand, for jsstore.open(..., clock=...): nothing timed happens
until the test moves it and calls js.tick()."""

SECOND = 1_000_000_000
START = 1_800_000_000 * SECOND      # 2027-01-15T08:00:00Z


class Clock:
    def __init__(self, now: int = START):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ns: int) -> None:
        self.now += ns

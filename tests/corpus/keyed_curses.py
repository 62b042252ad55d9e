"""A Python curses program that draws when a key arrives and times itself: the truth
`flushlab wrap --keys` is checked against (tests/it/keyed.rs).

    python3 keyed_curses.py MODE      MODE is one of
      grid    every key repaints every cell (a colour and a letter that move): one refresh a key
      menu    a dialog-style menu of 40 items: Down/Up (or j/k) move the highlight, a key that
              cannot move it (Down on the last item) changes nothing and draws nothing

`q` ends it. KEYS_LOG receives, at the end, one line a key: the key (curses' code), when
getch returned and when the frame it caused was written and drained (tcdrain: under
`wrap --try frame` the observer lets its held frame out there), CLOCK_MONOTONIC nanoseconds,
and 1 if the key changed the screen (a frame), else 0.
"""

import curses
import os
import sys
import termios
import time


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def grid(screen, n):
    rows, cols = screen.getmaxyx()
    letter = chr(ord("a") + n % 26)
    for y in range(rows):
        for x in range(cols - (1 if y == rows - 1 else 0)):
            screen.addstr(y, x, letter, curses.color_pair(1 + (x + y + n) % 7))
    return True


ITEMS = [f"item {i:02d}: a choice of the menu" for i in range(40)]


def menu(screen, selected, key):
    moved = selected
    if key in (curses.KEY_DOWN, ord("j")):
        moved = min(selected + 1, len(ITEMS) - 1)
    elif key in (curses.KEY_UP, ord("k")):
        moved = max(selected - 1, 0)
    rows, _ = screen.getmaxyx()
    top = max(0, moved - (rows - 3))
    screen.addstr(0, 2, "Choose one (Enter):", curses.A_BOLD)
    for row, item in enumerate(ITEMS[top : top + rows - 2]):
        attr = curses.A_REVERSE if top + row == moved else curses.A_NORMAL
        screen.addstr(row + 1, 4, item, attr)
    return moved


def main(screen):
    mode = sys.argv[1] if len(sys.argv) > 1 else "grid"
    curses.start_color()
    for i in range(1, 8):
        curses.init_pair(i, i, 0)
    curses.curs_set(0)
    screen.keypad(True)
    out = sys.stdout.fileno()
    log = []
    n, selected = 0, 0
    if mode == "menu":
        menu(screen, selected, None)
    else:
        grid(screen, n)
    screen.refresh()
    while True:
        key = screen.getch()
        read_ns = now_ns()
        if key == ord("q") or key == -1:
            break
        n += 1
        if mode == "menu":
            before = selected
            selected = menu(screen, selected, key)
            changed = selected != before
        else:
            changed = grid(screen, n)
        screen.refresh()
        termios.tcdrain(out)
        log.append((key, read_ns, now_ns(), int(changed)))
    return log


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] not in ("grid", "menu"):
        sys.exit(f"keyed_curses: unknown mode {sys.argv[1]!r}: grid, menu")
    keys = curses.wrapper(main)
    path = os.environ.get("KEYS_LOG")
    if path:
        with open(path, "w") as f:
            for key, read_ns, frame_ns, changed in keys:
                f.write(f"{key} {read_ns} {frame_ns} {changed}\n")

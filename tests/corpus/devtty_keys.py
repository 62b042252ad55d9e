"""A program that talks to its terminal through /dev/tty, not its standard streams (as less,
fzf and crossterm's event reader do): raw mode, one write a key read, `q` ends it. The truth
tests/it/keyed.rs holds wrap's view of it against: one terminal write(2) a key plus the first."""
import os
import termios
import tty

fd = os.open("/dev/tty", os.O_RDWR)
saved = termios.tcgetattr(fd)
tty.setraw(fd)
os.write(fd, b"\x1b[2J\x1b[Hready")
while True:
    got = os.read(fd, 64)
    os.write(fd, b"\x1b[H\x1b[2Kkeys " + got)
    if not got or b"q" in got:
        break
termios.tcsetattr(fd, termios.TCSANOW, saved)

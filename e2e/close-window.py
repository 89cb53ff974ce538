#!/usr/bin/env python3
"""Presses a window's close button, as the window manager does when a person clicks it: sends the X client message
WM_DELETE_WINDOW to the top-level window of process PID (found by its _NET_WM_PID property). Under Xvfb there is no
window manager and no title bar to click; this message is exactly what the close button sends. Uses libX11 through
ctypes, so it needs nothing installed beyond what the app itself runs on.

usage: close-window.py PID     exit 0 when the message was sent, 1 when no window of PID accepts it
"""
import ctypes
import ctypes.util
import sys

x = ctypes.cdll.LoadLibrary(ctypes.util.find_library("X11") or "libX11.so.6")
Window = ctypes.c_ulong
Atom = ctypes.c_ulong


class ClientMessageData(ctypes.Union):
    _fields_ = [("b", ctypes.c_char * 20), ("s", ctypes.c_short * 10), ("l", ctypes.c_long * 5)]


class XClientMessageEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int), ("display", ctypes.c_void_p),
        ("window", Window), ("message_type", Atom), ("format", ctypes.c_int), ("data", ClientMessageData),
    ]


class XEvent(ctypes.Union):
    _fields_ = [("xclient", XClientMessageEvent), ("pad", ctypes.c_long * 24)]


x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XDefaultRootWindow.restype = Window
x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x.XInternAtom.restype = Atom
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x.XQueryTree.argtypes = [ctypes.c_void_p, Window, ctypes.POINTER(Window), ctypes.POINTER(Window), ctypes.POINTER(ctypes.POINTER(Window)), ctypes.POINTER(ctypes.c_uint)]
x.XGetWindowProperty.argtypes = [ctypes.c_void_p, Window, Atom, ctypes.c_long, ctypes.c_long, ctypes.c_int, Atom, ctypes.POINTER(Atom), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_void_p)]
x.XSendEvent.argtypes = [ctypes.c_void_p, Window, ctypes.c_int, ctypes.c_long, ctypes.POINTER(XEvent)]
x.XFlush.argtypes = [ctypes.c_void_p]
x.XFree.argtypes = [ctypes.c_void_p]


class XWindowAttributes(ctypes.Structure):
    _fields_ = [
        ("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
        ("border_width", ctypes.c_int), ("depth", ctypes.c_int), ("visual", ctypes.c_void_p), ("root", Window),
        ("class", ctypes.c_int), ("bit_gravity", ctypes.c_int), ("win_gravity", ctypes.c_int),
        ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong), ("backing_pixel", ctypes.c_ulong),
        ("save_under", ctypes.c_int), ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int),
        ("map_state", ctypes.c_int), ("all_event_masks", ctypes.c_long), ("your_event_mask", ctypes.c_long),
        ("do_not_propagate_mask", ctypes.c_long), ("override_redirect", ctypes.c_int), ("screen", ctypes.c_void_p),
    ]


x.XGetWindowAttributes.argtypes = [ctypes.c_void_p, Window, ctypes.POINTER(XWindowAttributes)]
IS_VIEWABLE = 2


def viewable(display, window):
    """Whether the window is mapped and shown: GTK also keeps an unmapped client-leader window per process."""
    attrs = XWindowAttributes()
    return bool(x.XGetWindowAttributes(display, window, ctypes.byref(attrs))) and attrs.map_state == IS_VIEWABLE


def cardinals(display, window, prop):
    """The 32-bit values of a window property (CARDINAL or ATOM lists)."""
    actual, fmt, n, after, data = Atom(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong(), ctypes.c_void_p()
    if x.XGetWindowProperty(display, window, prop, 0, 64, 0, 0, ctypes.byref(actual), ctypes.byref(fmt), ctypes.byref(n), ctypes.byref(after), ctypes.byref(data)) != 0 or not data.value:
        return []
    values = [ctypes.cast(data, ctypes.POINTER(ctypes.c_ulong))[i] for i in range(n.value)] if fmt.value == 32 else []
    x.XFree(data)
    return values


def windows(display, root):
    """Every window below root, depth first."""
    parent, rootret, children, count = Window(), Window(), ctypes.POINTER(Window)(), ctypes.c_uint()
    if not x.XQueryTree(display, root, ctypes.byref(rootret), ctypes.byref(parent), ctypes.byref(children), ctypes.byref(count)):
        return
    kids = [children[i] for i in range(count.value)]
    if children:
        x.XFree(children)
    for w in kids:
        yield w
        yield from windows(display, w)


def main():
    pid = int(sys.argv[1])
    display = x.XOpenDisplay(None)
    if not display:
        sys.exit("cannot open the X display (is DISPLAY set?)")
    wm_pid = x.XInternAtom(display, b"_NET_WM_PID", 0)
    protocols = x.XInternAtom(display, b"WM_PROTOCOLS", 0)
    delete = x.XInternAtom(display, b"WM_DELETE_WINDOW", 0)
    for w in windows(display, x.XDefaultRootWindow(display)):
        if pid in cardinals(display, w, wm_pid) and delete in cardinals(display, w, protocols) and viewable(display, w):
            event = XEvent()
            event.xclient.type = 33  # ClientMessage
            event.xclient.window = w
            event.xclient.message_type = protocols
            event.xclient.format = 32
            event.xclient.data.l[0] = delete
            event.xclient.data.l[1] = 0  # CurrentTime
            x.XSendEvent(display, w, 0, 0, ctypes.byref(event))
            x.XFlush(display)
            print(f"sent WM_DELETE_WINDOW to window 0x{w:x} of process {pid}")
            return
    sys.exit(f"no window of process {pid} takes WM_DELETE_WINDOW")


main()

# Switchyard's Python worker: runs code steps of one run, one at a time, in one warm process.
#
# Requests come on stdin, one JSON object a line: {"node", "key", "code", "names"}. The step's idempotency key is
# set in the environment as SWITCHYARD_IDEMPOTENCY_KEY while it runs. The code is the body of a function
# whose parameters are the names (state, input, context, ...); what it returns is the step's output. Replies are
# written on stdout as one line each, starting with the record separator and the nonce Switchyard gave this process
# (SWITCHYARD_WORKER), so anything else the code prints is told apart and shown as the node's log. Before each
# reply the marker alone goes to stderr as a line, so everything the step wrote there is read before it ends.
import ast
import importlib.util
import json
import os
import sys
import traceback
import types

NONCE = os.environ.pop("SWITCHYARD_WORKER", "")
_reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
_errors = os.fdopen(os.dup(2), "w", encoding="utf-8")


def _send(message):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    # The same marker on stderr tells Switchyard it has read everything the step printed there.
    _errors.write("\x1e" + NONCE + "\n")
    _errors.flush()
    _reply.write("\x1e" + NONCE + json.dumps(message) + "\n")
    _reply.flush()


class Record(dict):
    """A dict whose keys also read as attributes (TEA's parallel results: `r.state`, `r["state"]`)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _run(node, code, names):
    """Runs the code. With a `return` it is the body of a function of the names (compiled so that tracebacks give
    the line in the node's code); without one, as TEA does, it runs as a script and its top-level names (but the
    given ones, modules, functions, classes and `_private` ones) are the output."""
    filename = "<" + node + ">"
    tree = ast.parse(code, filename=filename)
    namespace = {"__name__": "__switchyard__", "json": json}
    if not any(isinstance(n, ast.Return) for n in ast.walk(tree)):
        namespace.update(names)
        exec(compile(tree, filename, "exec"), namespace)
        return {
            k: v
            for k, v in namespace.items()
            if not k.startswith("_") and k not in names and k != "json"
            and not isinstance(v, (types.ModuleType, types.FunctionType, type))
        }
    wrapper = ast.parse("def __switchyard_step__(" + ", ".join(names) + "):\n    pass\n")
    wrapper.body[0].body = tree.body
    ast.fix_missing_locations(wrapper)
    exec(compile(wrapper, filename, "exec"), namespace)
    return namespace["__switchyard_step__"](**names)


def _where(error, filename):
    line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return f" (line {line})" if line else ""


def _call_module(path, names):
    """An OpenExpertise-style tool module: its `default` (or `run`) function, called with the state and the names."""
    spec = importlib.util.spec_from_file_location("switchyard_step_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    run = getattr(module, "default", None) or getattr(module, "run", None)
    if not callable(run):
        raise TypeError(path + " defines no function: define run(state, names)")
    return run(names.get("state"), names)


def _names(names):
    if isinstance(names.get("parallel_results"), list):
        names["parallel_results"] = [Record(r) if isinstance(r, dict) else r for r in names["parallel_results"]]
    return names


for request_line in sys.stdin:
    request = json.loads(request_line)
    node, names = request["node"], _names(request["names"])
    os.environ["SWITCHYARD_IDEMPOTENCY_KEY"] = request.get("key", "")
    filename = "<" + node + ">"
    try:
        if request.get("module"):
            filename = request["module"]
            result = _call_module(request["module"], names)
        else:
            result = _run(node, request["code"], names)
    except BaseException as error:  # noqa: BLE001 - every failure of user code (sys.exit too) fails the step
        traceback.print_exception(error, file=sys.stderr)
        detail = str(error)
        _send({"error": type(error).__name__ + (": " + detail if detail else "") + _where(error, filename)})
        continue
    try:
        _send({"ok": result})
    except (TypeError, ValueError) as error:
        _send({"error": "the step returned something that is not JSON data (" + str(error) + ")"})

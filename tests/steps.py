"""The pipeline's steps, loaded by path for the tests: a step is a script of workflow/scripts/<phase>/, not a module
of any package (steps import kernels and the library, never each other)."""
import importlib.util
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"


def step(path: str):
    """The step script workflow/scripts/<path>.py as a module ('aggregate/claims', 'paper/values/ours')."""
    name = "step_" + path.replace("/", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{path}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]

"""One typed request per worker job: the CLI, the GUI panels and the generated scripts all fill
the same object, so their defaults cannot drift apart (validate's tolerances and layer-wise
default did) and a misspelt key is an error, not a silently dropped setting.

A request is a dataclass that knows its job's name (``JOB``), its CLI command (``COMMAND``),
how to become worker params and back (strictly: ``core.typed``), and how to be written down as
a ``deploylens …`` line and as a Python script. Each room keeps its requests next to its other
types (``core/validate/request.py`` …); ``REQUESTS`` lists them by job for the worker side.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, ClassVar, Generic, TypeVar, cast

from deploylens.core import typed
from deploylens.core.guard import check_model_inputs
from deploylens.core.job_table import JOBS, job_for_request
from deploylens.core.job_table import request_class as _request_class
from deploylens.core.request_parts import (
    add_field_arguments,
    changed_flag,
    field_args,
    field_flags,
    field_values,
)

R = TypeVar("R", bound="Request[Any]")
ResultT = TypeVar("ResultT")  # the job's typed result (the job table's ``result`` class)

# job name → "module:Class", from the one job table (core/job_table.py)
REQUESTS: dict[str, str] = {name: job.request for name, job in JOBS.items() if job.request}


def request_class(job: str) -> type[Request[Any]]:
    """The request class of ``job`` (imported only when asked)."""
    found: type[Request[Any]] = _request_class(job)
    return found


class Request(Generic[ResultT]):
    """Base of the job requests (each is a ``@dataclass``), generic in the job's result:
    ``InspectRequest(Request["ModelSummary"])`` — so ``run()`` and the GUI's job handle carry
    the result's type and a handler taking anything else fails ``make lint``."""

    JOB: ClassVar[str] = ""  # both from the job table, by the class's own path
    COMMAND: ClassVar[str] = ""  # the ``deploylens`` command that fills it ("" for none)
    # the fields that name files, "in" or "out": what a remote worker is sent and sends back
    FILES: ClassVar[dict[str, str]] = {}
    # whether the job reads a model's weights (its external data): then the model-folder guard
    # stands in front of it; a job that only reports on the file (inspect) says what is wrong
    READS_WEIGHTS: ClassVar[bool] = True
    # fields a project file does not keep: the model (the project's own) and what is filled
    # at submission (plugin entry points of this machine)
    PROJECT_LEAVES_OUT: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A request's job and command are its row of the job table (declared once)."""
        super().__init_subclass__(**kwargs)
        job = job_for_request(f"{cls.__module__}:{cls.__qualname__}")
        if job is not None:
            cls.JOB, cls.COMMAND = job.name, job.command

    # -- worker params ------------------------------------------------------------------------
    def to_params(self) -> dict[str, Any]:
        """JSON-ready params for the worker."""
        result: dict[str, Any] = typed.to_dict(self)
        return result

    @classmethod
    def from_params(cls: type[R], params: Any) -> R:
        """The request a job was sent; unknown or misspelt keys and wrong types are errors,
        and a model it reads must keep its external data in its own folder (``core/guard``)."""
        if cls.READS_WEIGHTS:
            check_model_inputs(cls.FILES, params)
        return cls.from_fields(params, f"the {cls.JOB} request")

    @classmethod
    def from_fields(cls: type[R], data: Any, where: str) -> R:
        """The request from its fields, every one checked (one reader for the worker's params
        and a project's table; a request whose fields travel in another layout overrides it)."""
        return typed.from_dict(cls, data, where)

    # -- TOML (a project table, a saved request) -----------------------------------------------
    def to_toml(self) -> str:
        """The params as TOML: ``None`` left out (the default comes back), keys as text."""
        import tomli_w

        return tomli_w.dumps(_tomlable(self.to_params()))

    @classmethod
    def from_toml(cls: type[R], text: str) -> R:

        from deploylens.core.files import parse_toml

        return cls.from_params(parse_toml(text, f"the {cls.JOB} request", "TOML table"))

    # -- a project's table -------------------------------------------------------------------
    def project_table(self) -> dict[str, Any]:
        """The request as a project keeps it (TOML-ready): its own fields, nothing else."""
        params = self.to_params()
        kept = {k: v for k, v in params.items() if k not in self.PROJECT_LEAVES_OUT}
        table: dict[str, Any] = _tomlable(kept)
        return table

    @classmethod
    def from_project(cls: type[R], table: Any, what: str, **given: Any) -> R:
        """The request a project's table holds, read as strictly as the worker reads one (a
        shared project's wrong type or unknown key is said, never coerced); ``given``: the
        fields the project keeps elsewhere (its model). The model-folder guard is the
        worker's, when the request runs: opening a project never reads a model's bytes here."""
        from deploylens.core.errors import UserError

        if not isinstance(table, dict):
            raise UserError(f"The project's {what} settings are not a table.")
        return cls.from_fields({**table, **given}, f"The project's {what} settings")

    # -- the command line ---------------------------------------------------------------------
    # Generated from the fields' declared flags (``request_parts.cli``); a request with
    # arguments that are not one field each (a model spec, tolerances) adds those by hand
    # around the generated ones.
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The arguments that fill this request (a command adds its own output flags)."""
        add_field_arguments(cls, parser)

    @classmethod
    def from_args(cls: type[R], args: argparse.Namespace) -> R:
        if not field_flags(cls):
            raise NotImplementedError(f"{cls.__name__} has no command line")
        return cls(**field_values(cls, args))

    def cli_args(self) -> list[str]:
        """The arguments after ``deploylens COMMAND`` that give this request back."""
        if not field_flags(self):
            raise NotImplementedError(f"{type(self).__name__} has no command line")
        return field_args(self)

    def cli_line(self) -> str:
        return shlex.join(["deploylens", self.COMMAND, *self.cli_args()])

    # -- running it ---------------------------------------------------------------------------
    def run(
        self, python: str | None = None, on_progress: Any = None, timeout: float | None = None
    ) -> ResultT:
        """Run the job in a fresh worker (the CLI's way; the GUI submits the same params); the
        worker's answer is decoded into the job table's result class (tests check that class
        is the one this request is generic in)."""
        from deploylens.core.jobs import run_job

        return cast(ResultT, run_job(self.JOB, self.to_params(), python, on_progress, timeout))

    # -- a script -----------------------------------------------------------------------------
    def python_script(self) -> str:
        """A script that runs the same job through DeployLens's API (rooms with a tool-free
        reproducer — export, build — write that one instead)."""
        from deploylens.core.codegen import docstring, literal

        return (
            docstring(f"Runs the DeployLens job {self.JOB} with the settings it was given.")
            + "\n\nimport json\n\n"
            "from deploylens.core.jobs import run_job\n"
            "from deploylens.core.results import Result\n"
            f"from {type(self).__module__} import {type(self).__name__}\n\n"
            f"request = {type(self).__name__}.from_params({literal(self.to_params())})\n"
            "result = run_job(request.JOB, request.to_params())  # the job's typed result\n"
            "print(result.to_json() if isinstance(result, Result) else json.dumps(result))\n"
        )


def _tomlable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _tomlable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_tomlable(v) for v in value]
    return value


flag = changed_flag  # the rooms' name for it

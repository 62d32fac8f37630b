"""Hypothesis strategies that write grad-mode programs and their call schedules."""

from conformance.generators.inputs import devices, shapes, tensor_inputs
from conformance.generators.programs import programs
from conformance.generators.schedules import SINGLE_CALL, CallSpec, Schedule, schedules
from conformance.generators.statements import STATEMENT_KINDS

__all__ = ["programs", "schedules", "CallSpec", "Schedule", "SINGLE_CALL", "STATEMENT_KINDS",
           "devices", "shapes", "tensor_inputs"]

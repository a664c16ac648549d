"""A call, sent to what follows it: ``f(...)`` by what ``f`` names (a library function
imported by name, a class or function of the module or of the tree, a builtin), a Triton
launch ``kernel[grid](...)``, or ``x.f(...)`` by what ``x`` is (an address source, a library,
a class of the module or of the tree, a list, a tensor or an array)."""

from __future__ import annotations

import ast

from ptrport.lint.flow import arithmetic, launches, library_calls, method_calls, native_calls
from ptrport.lint.flow.classes import class_call, class_method_call, tree_method_call
from ptrport.lint.flow.interface import Arguments, Flow
from ptrport.lint.library import opens_ipc_memory
from ptrport.lint.tree_index import ClassShape, FunctionShape
from ptrport.lint.values import NOTHING, Frame, Holds, Value


def call(flow: Flow, node: ast.Call, frame: Frame) -> Value:
    """A call: by name (:func:`_call_of_name`), a launch, or ``x.f(...)``: ``.data_ptr()``,
    a library function, ``int.from_bytes``, a method of a class of the module, or a method
    of what ``x`` is. ``x`` is evaluated in this function itself, so that a chain of calls
    costs two frames a call: Python's recursion limit bounds how long a chain is followed."""
    func = node.func
    if isinstance(func, ast.Name):
        return _call_of_name(flow, func, node, frame)
    if isinstance(func, ast.Subscript):
        return launches.launch(flow, func, node, frame)
    if not isinstance(func, ast.Attribute):
        return flow.unknown_call(node, frame)
    if func.attr == "data_ptr":
        flow.value(func.value, frame)
        return Value(holds=Holds.ADDRESS, origin=flow.source(node))
    name = flow.qualify(func)
    if opens_ipc_memory(func.attr):
        flow.value(func.value, frame)
        return library_calls.ipc_open(flow, name, node, frame)
    if name is not None:
        found = native_calls.native_call(flow, name, node, frame)
        if found is not None:
            return found
        found = library_calls.library_call(flow, name, node, frame)
        if found is not None:
            return found
    base = func.value
    if isinstance(base, ast.Name) and base.id == "int" and func.attr == "from_bytes":
        return library_calls.from_bytes(flow, node, frame)
    receiver = flow.value(base, frame)
    owner = receiver.instance or receiver.denotes_class or ""
    if owner in flow.classes:
        return class_method_call(flow, flow.classes[owner], receiver, func, node, frame)
    if owner or receiver == NOTHING:
        flow.foreign_reads.add(func.attr)
    shape = flow.index.shapes.get(owner)
    if isinstance(shape, ClassShape):
        return tree_method_call(flow, shape, func, node, frame)
    return method_calls.method_call(flow, func, node, frame, receiver)


def _call_of_name(flow: Flow, func: ast.Name, node: ast.Call, frame: Frame) -> Value:
    """``f(...)``: a library function imported by name, a class or function of the module,
    or a builtin (none of them where ``f`` is a variable)."""
    name = func.id
    variable = frame.env.get(name, flow.module_env.get(name))
    if variable is not None:
        # A variable that shadows the import, the builtin or the definition of that name:
        # a class (``cls(...)``) or what is not followed (a factory passed in).
        if variable.denotes_class is None:
            return flow.unknown_call(node, frame)
        return class_call(flow, variable.denotes_class, node, frame)
    if opens_ipc_memory(name):
        return library_calls.ipc_open(flow, flow.imports.get(name), node, frame)
    qualified = flow.imports.get(name)
    if qualified is not None:
        found = library_calls.library_call(flow, qualified, node, frame)
        if found is not None:
            return found
    if name in flow.classes:
        return class_call(flow, name, node, frame)
    shape = None
    if qualified is not None:
        flow.consulted.add(qualified)
        shape = flow.index.shapes.get(qualified)
        if isinstance(shape, ClassShape):
            return class_call(flow, qualified, node, frame)
    if name == "bool" and qualified is None and name not in flow.functions:
        for argument in node.args:
            arithmetic.condition(flow, argument, frame)
        return NOTHING
    arguments, keywords = flow.arguments(node, frame)
    if qualified is not None and name not in flow.functions:
        flow.record_pass(qualified, Arguments(arguments, keywords))
    if name in flow.functions:
        return flow.run_function(
            flow.functions[name], None, arguments, keywords, None, frame.depth
        )[0]
    if isinstance(shape, FunctionShape):
        return shape.returns if shape.returns != NOTHING else flow.made_with_dtype(node, frame)
    builtin = library_calls.BUILTIN_CALLS.get(name)
    if builtin is not None and qualified is None:
        return builtin(flow, node, frame, arguments)
    return flow.made_with_dtype(node, frame)

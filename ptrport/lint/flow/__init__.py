"""Following device addresses through one module, to the storage they end up in.

Each expression is given an abstract :class:`~ptrport.lint.values.Value`: whether it holds an
address (or its int64 bits, or ints read back from int64 storage), whether it is typed storage
(a tensor, an array, a numpy scalar) of some dtype, a list or tuple of such values, a dtype, or
an instance of a class of the module. Statements are run in order within a function; both
branches of an ``if`` are run and joined, a loop body twice. Attributes set on ``self``
anywhere in a class are known in all its methods; a call to a function or method of the same
module runs its body with the arguments' values, a call of a library is read from the facts of
:mod:`ptrport.lint.library`. Where an address meets storage that cannot hold
``2**63..2**64-1``, a finding is recorded, worded by :mod:`ptrport.lint.rules`.

Where a value is not known, nothing is assumed: a finding needs an address, followed from its
source, and a dtype, read from the code.

:class:`~ptrport.lint.flow.module_flow.ModuleFlow` is the hub: what the module holds, the
passes, the core operations. Each family of handlers is a module with its dispatch table, found
by the node's type or the call's name, and sees the hub through the
:class:`~ptrport.lint.flow.interface.Flow` protocol:

- :mod:`~ptrport.lint.flow.statements`, :mod:`~ptrport.lint.flow.expressions` and
  :mod:`~ptrport.lint.flow.arithmetic`: statements, expressions, arithmetic on addresses;
- :mod:`~ptrport.lint.flow.calls`: a call, sent to one of
  :mod:`~ptrport.lint.flow.library_calls`, :mod:`~ptrport.lint.flow.method_calls`,
  :mod:`~ptrport.lint.flow.classes` (the module's functions and classes) or
  :mod:`~ptrport.lint.flow.launches` (Triton);
- :mod:`~ptrport.lint.flow.definitions` reads what the module defines before anything runs,
  :mod:`~ptrport.lint.flow.syntax` what its syntax says without following any value.
"""

from ptrport.lint.flow.module_flow import CLASS_PASSES, ModuleFlow

__all__ = ["CLASS_PASSES", "ModuleFlow"]

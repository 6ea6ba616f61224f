"""Arrays borrowed inside a kernel: the same data, shape and strides without a reference count.

numba counts the references to every array it holds (an atomic add on the array's ``MemInfo`` each
time an array is handed to a helper or copied into a variable, and an atomic subtract when that copy
dies) and its pruning pass removes the pairs only within simple control flow. In a hot loop that hands
arrays to inlined helpers (the stake rules, a seat sitting out) the pairs stay and can cost more than
the arithmetic itself, more still on several threads, since every thread adds to the same counters
(one cache line passed from core to core at each row; the figures are in the performance history).

:func:`borrowed` returns an array without a ``MemInfo``: numba then skips its counting (the
compiled code tests for a null pointer, and the compiler removes even that). The caller keeps the
array it borrowed from alive for as long as the kernel runs (an argument of the kernel, or a field of
one), and a borrowed array never leaves the kernel: it is never returned, stored in a struct or kept
by anything that outlives the call.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import cgutils, types
from numba.extending import intrinsic

__all__ = ["borrowed", "stack_int32", "stack_float64"]


def _borrowed_typer(typingctx: Any, array: Any) -> Any:
    if not isinstance(array, types.Array):
        return None
    sig = array(array)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array_type = signature.args[0]
        source = context.make_array(array_type)(context, builder, args[0])
        view = context.make_array(array_type)(context, builder)
        for name in ("data", "shape", "strides", "itemsize", "nitems"):
            setattr(view, name, getattr(source, name))
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    return sig, codegen


borrowed: Any = intrinsic(_borrowed_typer)
"""``borrowed(array)`` in compiled code: ``array`` without its reference count (module docstring)."""


def _stack_typer(item: Any, name: str) -> Any:
    """The typer of ``name(n)``: an uninitialized array of ``n`` ``item`` s in the kernel's stack frame."""
    array_type = types.Array(item, 1, "C")

    def typer(typingctx: Any, size: Any) -> Any:
        if not isinstance(size, types.IntegerLiteral) or size.literal_value < 1:
            return None
        n = size.literal_value
        sig = array_type(size)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            intp = context.get_value_type(types.intp)
            itemsize = context.get_abi_sizeof(context.get_value_type(item))
            # in the function's entry block: one slot a call, however often the line runs
            data = cgutils.alloca_once(builder, context.get_value_type(item), size=ir.Constant(intp, n))
            view = context.make_array(array_type)(context, builder)
            context.populate_array(
                view,
                data=data,
                shape=[ir.Constant(intp, n)],
                strides=[ir.Constant(intp, itemsize)],
                itemsize=ir.Constant(intp, itemsize),
                meminfo=None,
            )
            return view._getvalue()

        return sig, codegen

    typer.__name__ = f"_{name}_typer"
    return typer


stack_int32: Any = intrinsic(_stack_typer(types.int32, "stack_int32"))
"""``stack_int32(n)`` in compiled code, ``n`` a constant: an uninitialized int32 array of ``n`` items in
the kernel's stack frame, without a ``MemInfo`` (scratch space: no allocation, no reference count, as
:func:`borrowed`). It lives as long as the kernel's call: it is handed only to helpers, never returned
or stored."""
stack_float64: Any = intrinsic(_stack_typer(types.float64, "stack_float64"))
"""``stack_float64(n)``: :func:`stack_int32`'s float64 twin (running products of a block's lanes: an
array in the stack frame is one the compiler knows no other array overlaps, so it keeps no overlap
checks in the loops over it)."""

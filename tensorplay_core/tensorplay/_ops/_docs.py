"""Docstrings of the built-in ``tp::`` operators (``help(tp.add)``, ``tp.add.__doc__``, IDEs).

Each op is a record whose class is generated per op (``_dispatch.make_call``), so its docstring
is that class's ``__doc__``: set here once, after every op module has defined its ops. An entry
is the op's summary and the torch function or method it behaves like; the schema and the
common rules are added to each.
"""

from __future__ import annotations

# name -> (what it computes, the torch name whose semantics it follows)
DOCS = {
    # linear algebra added in session 46 (tensorplay.linalg's decompositions); input A is a batch
    # (..., m, n) of float32/float64 matrices; numpy.linalg on cpu, cupy.linalg on cuda
    "linalg_det": ("The determinant of each square matrix, ``(..., n, n)`` -> ``(...)``; "
                   "RuntimeError for fewer than 2 dims, non-square or non-float input.",
                   "torch.linalg.det"),
    "linalg_slogdet": ("``(sign, logabsdet)`` of each square matrix's determinant, each "
                       "``(...)``; the gradient flows through logabsdet.",
                       "torch.linalg.slogdet"),
    "linalg_inv_ex": ("``(inverse, info)``: the inverse of each square matrix and an int32 "
                      "``(...)`` code (0: success; > 0: singular, the inverse then NaN); "
                      "``check_errors=True`` raises ``tensorplay.linalg.LinAlgError`` instead.",
                      "torch.linalg.inv_ex"),
    "linalg_solve": ("``X`` with ``A X = B`` for square ``A`` ``(..., n, n)`` and ``B`` "
                     "``(..., n, k)``, batch dims broadcast, one float dtype; LinAlgError for a "
                     "singular ``A`` (``tensorplay.linalg.solve`` also takes vectors and "
                     "``left=``).", "torch.linalg.solve"),
    "linalg_cholesky_ex": ("``(L, info)``: the Cholesky factor (lower, or ``upper=True``) of "
                           "each symmetric positive-definite matrix, read from that triangle, "
                           "and an int32 ``(...)`` code (> 0: not positive-definite); "
                           "``check_errors=True`` raises LinAlgError instead.",
                           "torch.linalg.cholesky_ex"),
    "linalg_qr": ("``(Q, R)`` with ``A = Q R``, ``mode`` \"reduced\", \"complete\" or "
                  "\"r\" (Q empty); LAPACK's signs.", "torch.linalg.qr"),
    "linalg_svd": ("``(U, S, Vh)`` with ``A = U diag(S) Vh``, S descending, ``full_matrices`` "
                   "as torch; singular vectors unique up to sign only (here: each column of U with its "
                   "largest-magnitude entry positive, on every device).", "torch.linalg.svd"),
    "linalg_eigh": ("``(eigenvalues, eigenvectors)`` of each symmetric matrix read from its "
                    "``UPLO`` (\"L\"/\"U\") triangle; eigenvalues ascending; each eigenvector with "
                    "its largest-magnitude entry positive.",
                    "torch.linalg.eigh"),
    # two-operand math and inverse hyperbolics added in session 44
    "atan2": ("Arctangent of ``input / other`` in (-pi, pi] by the quadrant of ``(other, "
              "input)``, elementwise with broadcasting; tensors only; integer and bool operands "
              "give the default float dtype.", "torch.atan2"),
    "hypot": ("``sqrt(input**2 + other**2)`` without overflow, elementwise with broadcasting; "
              "floating tensors only (NotImplementedError otherwise).", "torch.hypot"),
    "fmax": ("Elementwise maximum with broadcasting where a NaN loses to a number (C's ``fmax``; "
             "NaN only where both are NaN).", "torch.fmax"),
    "fmin": ("Elementwise minimum with broadcasting where a NaN loses to a number (C's ``fmin``; "
             "NaN only where both are NaN).", "torch.fmin"),
    "nextafter": ("The next floating value after ``input`` toward ``other``, elementwise; "
                  "floating tensors only (NotImplementedError otherwise).", "torch.nextafter"),
    "fmod": ("C's fmod: the remainder of ``input / other`` with the dividend's sign; keeps "
             "integer dtypes (RuntimeError for an integer zero divisor; NotImplementedError for "
             "bool); ``other`` may be a number.", "torch.fmod"),
    "copysign": ("``|input|`` with the sign of ``other`` (-0.0 counts as negative); ``other`` "
                 "may be a number; integer and bool operands give the default float dtype.",
                 "torch.copysign"),
    "asinh": ("Inverse hyperbolic sine, elementwise; integer and bool inputs give the default "
              "float dtype.", "torch.asinh"),
    "acosh": ("Inverse hyperbolic cosine, elementwise (NaN below 1); integer and bool inputs "
              "give the default float dtype.", "torch.acosh"),
    "xlogy": ("``input * log(other)``, 0 where ``input`` is 0 (NaN where ``other`` is NaN), "
              "elementwise with broadcasting; ``other`` may be a number; integer and bool operands "
              "give the default float dtype.", "torch.xlogy"),
    "scatter_reduce": ("``self`` with each value of ``src`` reduced (``reduce``: \"sum\", "
                       "\"prod\", \"mean\", \"amax\", \"amin\") into the position ``index`` "
                       "names along ``dim``; ``self``'s own value counted unless "
                       "``include_self=False``; ``src`` of ``self``'s dtype.",
                       "torch.scatter_reduce"),
    "atanh": ("Inverse hyperbolic tangent, elementwise (+-inf at +-1, NaN beyond); integer and "
              "bool inputs give the default float dtype.", "torch.atanh"),
    # unary math added in session 41 (torch.expm1 ... torch.trunc)
    "expm1": ("``exp(input) - 1``, elementwise, accurate near 0; integer and bool inputs give "
              "the default float dtype.", "torch.expm1"),
    "log1p": ("``log(1 + input)``, elementwise, accurate near 0 (``-inf`` at -1, NaN below); "
              "integer and bool inputs give the default float dtype.", "torch.log1p"),
    "log2": ("Base-2 logarithm, elementwise (``-inf`` at 0, NaN below); integer and bool "
             "inputs give the default float dtype.", "torch.log2"),
    "log10": ("Base-10 logarithm, elementwise (``-inf`` at 0, NaN below); integer and bool "
              "inputs give the default float dtype.", "torch.log10"),
    "exp2": ("``2 ** input``, elementwise; integer and bool inputs give the default float "
             "dtype.", "torch.exp2"),
    "tan": ("Tangent, elementwise; integer and bool inputs give the default float dtype.",
            "torch.tan"),
    "asin": ("Arcsine, elementwise (NaN outside [-1, 1]); integer and bool inputs give the "
             "default float dtype.", "torch.asin"),
    "acos": ("Arccosine, elementwise (NaN outside [-1, 1]); integer and bool inputs give the "
             "default float dtype.", "torch.acos"),
    "atan": ("Arctangent, elementwise; integer and bool inputs give the default float dtype.",
             "torch.atan"),
    "sinh": ("Hyperbolic sine, elementwise; integer and bool inputs give the default float "
             "dtype.", "torch.sinh"),
    "cosh": ("Hyperbolic cosine, elementwise; integer and bool inputs give the default float "
             "dtype.", "torch.cosh"),
    "trunc": ("Each element rounded toward zero (keeps the dtype; integer tensors are returned "
              "unchanged, as a copy).", "torch.trunc"),
    "abs": ("Absolute value, elementwise.", "torch.abs"),
    "add": ("``input + other``, elementwise with broadcasting; either operand may be a Python "
            "number (a number first is weak, as ``5 + t``).", "torch.add"),
    "add_": ("In-place ``self += other`` (broadcast to ``self``'s shape); returns ``self``.",
             "torch.Tensor.add_"),
    "all": ("True where every element (along ``dim`` if given) is nonzero: bool, or uint8 "
            "(1/0) for uint8 input as torch.", "torch.all"),
    "amax": ("Maximum over ``dim`` (all dims by default), values only.", "torch.amax"),
    "amin": ("Minimum over ``dim`` (all dims by default), values only.", "torch.amin"),
    "any": ("True where any element (along ``dim`` if given) is nonzero: bool, or uint8 "
            "(1/0) for uint8 input as torch.", "torch.any"),
    "arange": ("Values from ``start`` to ``end`` (exclusive) by ``step``, 1-D.", "torch.arange"),
    "argmax": ("Index of the maximum (along ``dim``, or of the flattened tensor).",
               "torch.argmax"),
    "argmin": ("Index of the minimum (along ``dim``, or of the flattened tensor).",
               "torch.argmin"),
    "argsort": ("Indices that sort ``self`` along ``dim``.", "torch.argsort"),
    "bitwise_and": ("``input & other``, elementwise with broadcasting, on integer and bool "
                    "tensors (logical AND on bool); either operand may be a Python int or bool "
                    "(``bitwise_and(5, t)`` is ``5 & t``). "
                    "Floating dtypes raise ``RuntimeError`` (not implemented).",
                    "torch.bitwise_and"),
    "bitwise_left_shift": ("``input << other``, elementwise with broadcasting, on integer "
                           "tensors (wrapping in the result dtype); an amount outside "
                           "``[0, bits)`` gives 0; ``input`` may be a Python int (``1 << t``). "
                           "Floating and bool dtypes raise ``RuntimeError``.",
                           "torch.bitwise_left_shift"),
    "bitwise_not": ("``~input``, elementwise, on integer and bool tensors (logical NOT on "
                    "bool). Floating dtypes raise ``RuntimeError``.", "torch.bitwise_not"),
    "bitwise_or": ("``input | other``, elementwise with broadcasting, on integer and bool "
                   "tensors (logical OR on bool); either operand may be a Python int or bool. "
                   "Floating dtypes raise ``RuntimeError``.", "torch.bitwise_or"),
    "bitwise_right_shift": ("``input >> other`` (arithmetic for signed dtypes), elementwise "
                            "with broadcasting, on integer tensors; an amount outside "
                            "``[0, bits)`` gives the sign (-1 or 0; 0 for uint8); ``input`` may "
                            "be a Python int. Floating and bool dtypes raise ``RuntimeError``.",
                            "torch.bitwise_right_shift"),
    "bitwise_xor": ("``input ^ other``, elementwise with broadcasting, on integer and bool "
                    "tensors (logical XOR on bool); either operand may be a Python int or "
                    "bool. "
                    "Floating dtypes raise ``RuntimeError``.", "torch.bitwise_xor"),
    "cat": ("Concatenation of tensors along an existing ``dim``.", "torch.cat"),
    "ceil": ("Smallest integer value not below each element.", "torch.ceil"),
    "clone": ("A copy with its own storage (same values, dtype and device).", "torch.clone"),
    "copy_": ("Copies ``src`` into ``self`` in place (broadcast, cast, across devices); "
              "returns ``self``.", "torch.Tensor.copy_"),
    "cos": ("Cosine, elementwise.", "torch.cos"),
    "cumsum": ("Cumulative sum along ``dim``.", "torch.cumsum"),
    "div": ("True division ``input / other``, elementwise with broadcasting (float result); "
            "either operand may be a Python number.", "torch.div"),
    "div_": ("In-place true division ``self /= other`` (floating ``self`` only); returns "
             "``self``.", "torch.Tensor.div_"),
    "empty": ("An uninitialised tensor of the given shape.", "torch.empty"),
    "eq": ("``input == other``, elementwise (bool result).", "torch.eq"),
    "erf": ("Error function, elementwise.", "torch.erf"),
    "exp": ("Exponential, elementwise.", "torch.exp"),
    "expand": ("A broadcast view of ``self`` to ``size`` (no copy; -1 keeps a dimension).",
               "torch.Tensor.expand"),
    "eye": ("A 2-D identity matrix.", "torch.eye"),
    "fill_": ("Fills ``self`` with ``value`` in place; returns ``self``.", "torch.Tensor.fill_"),
    "floor": ("Largest integer value not above each element.", "torch.floor"),
    "floor_divide": ("``input // other``, rounding toward minus infinity; either operand may be "
                     "a Python number (weak: ``floor_divide(7, int8_t)`` is int8); integer "
                     "division by zero raises ``RuntimeError``.", "torch.floor_divide"),
    "full": ("A tensor of the given shape filled with ``fill_value``.", "torch.full"),
    "gather": ("Values of ``self`` at ``index`` along ``dim``.", "torch.gather"),
    "ge": ("``input >= other``, elementwise (bool result).", "torch.ge"),
    "gt": ("``input > other``, elementwise (bool result).", "torch.gt"),
    "index": ("``self[indices]`` with tensor indices (advanced indexing).",
              "torch.Tensor.__getitem__"),
    "index_add": ("``self`` with ``source`` added at ``index`` along ``dim``.",
                  "torch.index_add"),
    "index_put_": ("``self[indices] = values`` in place (``accumulate=True`` adds); returns "
                   "``self``.", "torch.Tensor.index_put_"),
    "isfinite": ("True where an element is neither infinite nor NaN.", "torch.isfinite"),
    "isinf": ("True where an element is positive or negative infinity.", "torch.isinf"),
    "isnan": ("True where an element is NaN.", "torch.isnan"),
    "le": ("``input <= other``, elementwise (bool result).", "torch.le"),
    "linspace": ("``steps`` evenly spaced values from ``start`` to ``end`` inclusive.",
                 "torch.linspace"),
    "log": ("Natural logarithm, elementwise.", "torch.log"),
    "log_softmax": ("``log(softmax(self, dim))``, computed stably.", "torch.log_softmax"),
    "logical_and": ("Elementwise logical AND (bool result).", "torch.logical_and"),
    "logical_not": ("Elementwise logical NOT (bool result).", "torch.logical_not"),
    "logical_or": ("Elementwise logical OR (bool result).", "torch.logical_or"),
    "lt": ("``input < other``, elementwise (bool result).", "torch.lt"),
    "masked_fill_": ("Sets ``self`` to ``value`` where ``mask`` is true, in place; returns "
                     "``self``.", "torch.Tensor.masked_fill_"),
    "masked_scatter_": ("Copies consecutive elements of ``source`` into ``self`` where "
                        "``mask`` is true, in place.", "torch.Tensor.masked_scatter_"),
    "masked_select": ("The elements of ``self`` where ``mask`` is true, as a 1-D tensor.",
                      "torch.masked_select"),
    "matmul": ("Matrix product with broadcasting of batch dimensions (1-D operands as "
               "vectors).", "torch.matmul"),
    "max": ("Maximum of all elements, or ``(values, indices)`` along ``dim``.", "torch.max"),
    "maximum": ("Elementwise maximum of two tensors (NaN propagates).", "torch.maximum"),
    "mean": ("Mean over ``dim`` (all dims by default); floating dtypes.", "torch.mean"),
    "min": ("Minimum of all elements, or ``(values, indices)`` along ``dim``.", "torch.min"),
    "minimum": ("Elementwise minimum of two tensors (NaN propagates).", "torch.minimum"),
    "mul": ("``input * other``, elementwise with broadcasting; either operand may be a Python "
            "number.", "torch.mul"),
    "mul_": ("In-place ``self *= other``; returns ``self``.", "torch.Tensor.mul_"),
    "narrow": ("A view of ``length`` elements of ``dim`` from ``start``.", "torch.narrow"),
    "ne": ("``input != other``, elementwise (bool result).", "torch.ne"),
    "neg": ("``-input``, elementwise.", "torch.neg"),
    "permute": ("A view with the dimensions reordered as ``dims``.", "torch.permute"),
    "pow": ("``input ** exponent``, elementwise with broadcasting; either may be a Python "
            "number (``pow(2, t)`` is ``2 ** t``). A float32 tensor takes a number exponent "
            "as a double (an odd integer past 2^24 stays odd: ``(-1.0) ** 16777217`` is -1.0); "
            "float16 refuses a finite exponent past +-65504 with ``RuntimeError``, as torch's "
            "cpu kernel. On cpu, a float32/float64/bfloat16 tensor to the number 0.5, -0.5, "
            "-1, 2, 3 or -2 is computed as torch's kernel does: ``sqrt(x)``, ``1 / sqrt(x)``, "
            "``1 / x``, ``x * x``, ``x * x * x``, ``1 / (x * x)`` (so ``(-0.0) ** 0.5`` is "
            "-0.0 and ``(-inf) ** 0.5`` NaN, where ``pow`` gives 0.0 and inf).", "torch.pow"),
    "prod": ("Product over ``dim`` (all elements by default).", "torch.prod"),
    "rand": ("Uniform random values in [0, 1) of the given shape.", "torch.rand"),
    "randint": ("Random integers in [``low``, ``high``) of the given shape.", "torch.randint"),
    "randn": ("Standard normal random values of the given shape.", "torch.randn"),
    "rdiv": ("``other / input`` (the reflected division: ``2 / t``).", "torch.Tensor.__rtruediv__"),
    "relu": ("``max(input, 0)``, elementwise.", "torch.relu"),
    "remainder": ("``input % other``: a non-zero remainder has the sign of ``other`` (Python's "
                  "modulo), a zero one the sign of ``input`` (torch's: ``-4. % 2.`` is -0.0); "
                  "either operand may be a Python number (weak: ``remainder(7, int8_t)`` is "
                  "int8); integer division by zero raises ``RuntimeError``.", "torch.remainder"),
    "reshape": ("``self`` with a new shape: a view when the strides allow, else a copy.",
                "torch.reshape"),
    "round": ("Rounds to the nearest integer, halves to even (``decimals`` digits if given).",
              "torch.round"),
    "rpow": ("``other ** input`` (the reflected power: ``2 ** t``).", "torch.Tensor.__rpow__"),
    "rsqrt": ("``1 / sqrt(input)``, elementwise.", "torch.rsqrt"),
    "rsub": ("``other - input`` (the reflected subtraction: ``1 - t``).", "torch.rsub"),
    "scatter_add": ("``self`` with ``src`` added at ``index`` along ``dim``.",
                    "torch.scatter_add"),
    "select": ("A view of index ``index`` of ``dim`` (that dimension removed).",
               "torch.select"),
    "sigmoid": ("``1 / (1 + exp(-input))``, elementwise.", "torch.sigmoid"),
    "sign": ("-1, 0 or 1 by the sign of each element, in its dtype (-0.0 gives 0); NaN gives "
             "0, as torch (NumPy's sign keeps NaN); a bool tensor is returned as it is (a copy).",
             "torch.sign"),
    "searchsorted": ("For each value of ``self``, the index where it would be inserted into the "
                     "sorted last dim of ``sorted_sequence`` (binary search; int64, int32 with "
                     "``out_int32``).", "torch.searchsorted"),
    "sin": ("Sine, elementwise.", "torch.sin"),
    "slice": ("A view of ``dim`` from ``start`` to ``end`` by ``step`` (``t[a:b:c]``).",
              "torch.Tensor.__getitem__"),
    "softmax": ("``exp(self) / sum(exp(self), dim)``, computed stably.", "torch.softmax"),
    "sort": ("``(values, indices)`` of ``self`` sorted along ``dim``.", "torch.sort"),
    "sqrt": ("Square root, elementwise.", "torch.sqrt"),
    "_norm_root": ("The root of a norm, ``self ** (1/p)`` elementwise (``sqrt`` for p = 2; the "
                   "values of ``sqrt``/``pow``), ``self`` a sum of ``|x|**p`` or a variance; its "
                   "gradient ``grad * result**(1-p) / p`` is 0 where the result is 0, as torch's "
                   "norm and std backward. Integers give the default float dtype; RuntimeError "
                   "for p = 0. Internal (``tensorplay.linalg.vector_norm``, ``norm``, ``dist``, "
                   "``renorm``, ``cdist``, ``std`` take it).", None),
    "squeeze": ("A view without the size-1 dimensions (or just ``dim``).", "torch.squeeze"),
    "stack": ("Tensors of one shape joined along a new ``dim``.", "torch.stack"),
    "sub": ("``input - other``, elementwise with broadcasting; either operand may be a Python "
            "number (not a bool one).", "torch.sub"),
    "sub_": ("In-place ``self -= other`` (no bool operand); returns ``self``.",
             "torch.Tensor.sub_"),
    "sum": ("Sum over ``dim`` (all elements by default).", "torch.sum"),
    "tanh": ("Hyperbolic tangent, elementwise.", "torch.tanh"),
    "to_device": ("A copy of ``self`` on another device (``t.to(device)``).",
                  "torch.Tensor.to"),
    "to_dtype": ("``self`` cast to another dtype (``t.to(dtype)``).", "torch.Tensor.to"),
    "topk": ("``(values, indices)`` of the ``k`` largest (or smallest) along ``dim``.",
             "torch.topk"),
    "transpose": ("A view with dimensions ``dim0`` and ``dim1`` swapped.", "torch.transpose"),
    "unsqueeze": ("A view with a size-1 dimension inserted at ``dim``.", "torch.unsqueeze"),
    "view": ("A view of ``self`` with a new shape (same storage; strides must allow it).",
             "torch.Tensor.view"),
    "where": ("Elements of ``self`` where ``condition`` is true, else of ``other``.",
              "torch.where"),
}

# special functions (session 46): integer and bool inputs give the default float dtype; float16
# computed in float64, bfloat16 in float32, rounded once
_FL = " Integer and bool inputs give the default float dtype."
DOCS.update({
    "lgamma": ("``log|Gamma(input)|``, elementwise: +inf at 0, the negative integers and +-inf."
               + _FL, "torch.lgamma"),
    "digamma": ("``d/dx log Gamma(input)``, elementwise: -inf at +0, +inf at -0, NaN at the "
                "negative integers and -inf." + _FL, "torch.digamma"),
    "polygamma": ("The ``n``-th derivative of digamma (``n`` >= 0, RuntimeError otherwise), "
                  "elementwise." + _FL, "torch.polygamma"),
    "mvlgamma": ("The multivariate log-gamma function of dimension ``p``: ``p(p-1)/4 log(pi) + "
                 "sum_{i<p} lgamma(input - i/2)``, elementwise (RuntimeError for ``p`` < 1)."
                 + _FL, "torch.mvlgamma"),
    "erfc": ("``1 - erf(input)`` without cancellation (relative accuracy in the upper tail), "
             "elementwise." + _FL, "torch.erfc"),
    "erfcx": ("The scaled complementary error function ``exp(input**2) * erfc(input)``, "
              "elementwise (inf below about -26.6)." + _FL, "torch.special.erfcx"),
    "erfinv": ("The inverse error function, elementwise: +-inf at +-1, NaN outside [-1, 1]."
               + _FL, "torch.erfinv"),
    "ndtri": ("The inverse of the standard normal CDF, elementwise: -inf at 0, inf at 1, NaN "
              "outside [0, 1]." + _FL, "torch.special.ndtri"),
    "i0": ("The modified Bessel function of the first kind of order 0, elementwise (NaN at "
           "+-inf, as torch)." + _FL, "torch.i0"),
    "i0e": ("``exp(-|input|) * i0(input)``, elementwise." + _FL, "torch.special.i0e"),
    "i1": ("The modified Bessel function of the first kind of order 1, elementwise (NaN at "
           "+-inf, as torch)." + _FL, "torch.special.i1"),
    "i1e": ("``exp(-|input|) * i1(input)``, elementwise." + _FL, "torch.special.i1e"),
    "sinc": ("``sin(pi input) / (pi input)``, 1 at 0, elementwise." + _FL, "torch.sinc"),
    "logit": ("``log(z / (1 - z))``, ``z`` the input clamped to ``[eps, 1 - eps]`` when "
              "``eps`` is given, elementwise." + _FL, "torch.logit"),
    "xlog1py": ("``input * log1p(other)``, 0 where ``input`` is 0 (NaN where ``other`` is NaN), "
                "elementwise with broadcasting; ``other`` may be a number." + _FL,
                "torch.special.xlog1py"),
    "heaviside": ("0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > "
                  "0``, with broadcasting; operands of one dtype (RuntimeError otherwise); not "
                  "differentiable.", "torch.heaviside"),
    "ldexp": ("``input * 2 ** other`` (``2 ** other`` in ``other``'s floating dtype, the "
              "default one for integers), with broadcasting; tensors only.", "torch.ldexp"),
    "frexp": ("``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent``, "
              "``|mantissa|`` in [0.5, 1), ``exponent`` int32; floating tensors only "
              "(RuntimeError otherwise).", "torch.frexp"),
})

_RULES = ("Operands share one device (a 0-dim cpu tensor joins any) and promote their dtypes "
          "as torch does; runs on every device with a plugin, on fake tensors through its fake "
          "rule, and under autograd where torch has a gradient. Raises ``DispatchError`` for "
          "mixed devices or a device without a kernel, ``TypeError``/``ValueError`` for bad "
          "arguments.")


def doc(op) -> str:
    """The docstring of built-in op record ``op``."""
    name = op.name.split("::")[1].split(".")[0]
    what, like = DOCS.get(name, (f"The built-in operator ``{op.name}``.", None))
    same = f" Same as ``{like}``." if like else ""
    return f"{what}{same}\n\nSchema: ``{op.schema}``.\n\n{_RULES}"


def apply(builtins: dict) -> None:
    """Set the docstring of every built-in op (its generated class's ``__doc__``)."""
    for op in builtins.values():
        type(op).__doc__ = doc(op)

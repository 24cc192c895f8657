r"""Rigorous floating-point bounds for the verifier: what a float64 computation may have
lost, bounded from the quantities it actually computed, never from a tolerance.

The model is IEEE 754 double precision with round to nearest (``u = 2⁻⁵³``) and the
standard error analysis of Higham, *Accuracy and Stability of Numerical Algorithms*
(2002): a sum or dot product of ``n`` terms, in any order, errs by at most
``γ_n·Σ|terms|`` with ``γ_n = nu/(1 − nu)`` (§3.1); a Cholesky factorisation that runs
to completion on a symmetric ``A`` gives ``R̂ᵀR̂ = A + ΔA`` with
``|ΔA| ≤ γ_{n+1}|R̂ᵀ||R̂|`` (Thm. 10.3), whatever the blocking of conventional BLAS.

**PSD test** (:func:`certainly_psd`, after Rump, "Verification of positive
definiteness", BIT 46, 2006). From ``|ΔA| ≤ γ_{n+1}|R̂ᵀ||R̂|`` and
``‖|R̂ᵀ||R̂|‖₂ ≤ ‖R̂‖_F² = tr(A + ΔA) ≤ tr A/(1 − γ_{n+1})`` follows
``λ_min(A) ≥ −γ_{n+1} tr A/(1 − γ_{n+1})`` whenever the factorisation succeeds. It is
run on ``A = fl(H − cI)`` with a shift ``c`` above that loss, the shift's own rounding
and the error ``e`` of ``H`` itself: success proves that every symmetric matrix within
``e`` of ``H`` (2-norm) is positive definite. A test that fails proves nothing; callers
then report the weakest valid bound, never one a tolerance let through.

**Scatters** (:class:`Scatter`). ``S = Σ_s w_s z_s z_sᵀ`` summed in blocks of
:data:`BLOCK` rows: each block's product errs by ``γ_{b+1}`` and the sum of ``K``
partial matrices by ``γ_K``, entrywise relative to ``|Z|ᵀ|W||Z|``, whose 2-norm is at
most its trace ``Σ|w_s|‖z_s‖²``. Rows ``z_s`` known only to ``‖z_s − z*_s‖ ≤ η_s`` and
weights to ``|w_s − w*_s| ≤ ω_s`` add ``Σ|w_s|η_s(2‖z_s‖ + η_s) + Σ ω_s(‖z_s‖ + η_s)²``.
"""

from __future__ import annotations

import numpy as np

#: the unit roundoff of float64
UNIT = 2.0**-53
#: rows of a scatter's block (its products err by γ_{BLOCK+1})
BLOCK = 4096
#: covers the few roundings of evaluating an error bound itself (a bound computed in
#: float64 from sums of non-negative terms errs by far less than this share); it scales
#: error terms only, never a bound or an objective
SAFETY = 1.0 + 2.0**-20
#: below any absolute error of a quantity scaled to order 1 (underflow in the Cholesky
#: factorisation: Rump's terms in the smallest subnormal are far smaller)
TINY = 2.0**-1000


def gamma(n):
    """``γ_n = nu/(1 − nu)``: the relative error of a sum of ``n`` terms."""
    nu = float(n) * UNIT
    if nu >= 0.5:
        raise ValueError(f"γ_{n} is not a useful bound (n·u = {nu:.3g})")
    return nu / (1.0 - nu)


def certainly_psd(H, err=0.0):
    """Whether every symmetric matrix within ``err`` (2-norm) of ``H`` is positive
    definite, proved by one Cholesky factorisation (module docstring).

    ``H`` is read from its lower triangle (mirrored exactly). ``True`` is a proof;
    ``False`` means only that the test could not prove it (a singular or indefinite
    matrix, or one too close to singular for ``err``).
    """
    H = np.asarray(H, dtype=np.float64)
    d = H.shape[0]
    if d == 0:
        return True
    if not (np.isfinite(H).all() and np.isfinite(err) and err >= 0):
        return False
    low = np.tril(H)
    H = low + np.tril(low, -1).T
    diag = np.diag(H)
    if diag.min() <= 0:  # a positive definite matrix has a positive diagonal
        return False
    trace = float(diag.sum()) * (1.0 + gamma(d))
    scale = 2.0 ** -np.floor(np.log2(trace))  # a power of two: exact
    H, trace, err = H * scale, trace * scale, err * scale
    g = gamma(d + 1)
    loss = g / (1.0 - g) * trace * (1.0 + UNIT)  # the factorisation's, on tr(A) ≤ tr(H)
    shift = (err + loss + UNIT * float(diag.max()) * scale) * (1.0 + 8.0 * UNIT)
    shift = shift / (1.0 - UNIT) * SAFETY + TINY  # the shift's own rounding on the diagonal
    A = H.copy()
    A[np.diag_indices(d)] -= shift
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return False
    return True


class Scatter:
    """``S = Σ_s w_s z_s z_sᵀ`` accumulated block by block with a rigorous bound on
    ``‖S − S*‖₂``, ``S*`` the same sum over the exact rows and weights (module
    docstring). Feed blocks with :meth:`add`; read ``S`` and :meth:`error`.
    """

    def __init__(self, dim):
        self.S = np.zeros((dim, dim))
        self.blocks = 0
        self.mass = 0.0  #: Σ|w_s|‖z_s‖² (the products' error scale)
        self.perturbed = 0.0  #: the rows' and weights' own errors

    def add(self, Z, w, eta=None, omega=None):
        """Add rows ``Z`` (``(b, dim)``, ``b ≤`` :data:`BLOCK`) with weights ``w``;
        ``eta``: bounds on ``‖z_s − z*_s‖``; ``omega``: bounds on ``|w_s − w*_s|``."""
        if len(Z) > BLOCK:
            raise ValueError(f"a scatter block holds at most {BLOCK} rows")
        if len(Z) == 0:
            return
        self.S += (Z.T * w) @ Z
        self.blocks += 1
        norm2 = np.einsum("ij,ij->i", Z, Z)
        aw = np.abs(w)
        self.mass += float(aw @ norm2)
        if eta is not None:
            self.perturbed += float(aw @ (eta * (2.0 * np.sqrt(norm2) + eta)))
        if omega is not None:
            grown = np.sqrt(norm2) + (0.0 if eta is None else eta)
            self.perturbed += float(omega @ (grown * grown))

    def error(self):
        """A bound on ``‖S − S*‖₂``."""
        products = gamma(BLOCK + 1) + gamma(max(self.blocks, 1)) * (1.0 + gamma(BLOCK + 1))
        sums = 1.0 + gamma(self.blocks * BLOCK + 8)  # the float sums of mass and perturbed
        return (products * self.mass + self.perturbed) * sums * SAFETY


def sum_upper(total, n):
    """An upper bound on the exact sum of ``n`` non-negative float64 terms whose float64
    sum (in any order) is ``total``."""
    return float(total) * (1.0 + gamma(max(n, 1))) * (1.0 + 4 * UNIT)


def sum_lower(total, n):
    """A lower bound on the exact sum of ``n`` non-negative float64 terms whose float64
    sum (in any order) is ``total``."""
    return float(total) / (1.0 + gamma(max(n, 1))) * (1.0 - 4 * UNIT)

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


# --- spectral bounds (the POE and Maurer verifiers): built on certainly_psd above --------


def lambda_min_lower(H, err=0.0, tries=8):
    """A rigorous lower bound on ``λ_min`` of every symmetric matrix within ``err``
    (2-norm) of ``H`` (read from its lower triangle, as :func:`certainly_psd`).

    ``eigvalsh`` gives a guess ``w₀`` (not trusted); the bound is the first
    ``c = w₀ − δ`` (``δ`` growing fourfold from the loss of the Cholesky test) for which
    :func:`certainly_psd` proves ``H − cI`` positive definite, ``fl(H_ii − c)``'s rounding
    added to ``err``. Should every try fail (a matrix too ill-scaled for the test),
    Gershgorin's disc bound ``min_i (H_ii − Σ_{j≠i}|H_ij|) − err``, its rounding
    accounted for: weaker, never unsound. ``-inf`` for non-finite input.
    """
    H = np.asarray(H, dtype=np.float64)
    d = H.shape[0]
    if d == 0:
        return np.inf
    if not (np.isfinite(H).all() and np.isfinite(err) and err >= 0):
        return -np.inf
    low = np.tril(H)
    H = low + np.tril(low, -1).T
    w0 = float(np.linalg.eigvalsh(H)[0])
    diag = np.diag(H)
    spread = float(np.abs(diag - w0).sum()) + abs(w0) + float(np.abs(H).max())
    base = 2.0 * err + 4.0 * gamma(2 * d + 4) * spread + TINY
    for k in range(tries):
        c = w0 - base * 4.0**k
        A = H.copy()
        A[np.diag_indices(d)] -= c
        e = err + UNIT * float(np.abs(np.diag(A)).max()) * (1.0 + 4.0 * UNIT)
        if certainly_psd(A, e):
            return c
    return _gershgorin_lower(H, err)


def _gershgorin_lower(H, err):
    """``min_i (H_ii − Σ_{j≠i}|H_ij|) − err``, rounded down."""
    d = H.shape[0]
    radius = (np.abs(H).sum(axis=1) - np.abs(np.diag(H))) * (1.0 + gamma(d + 1))
    disc = np.diag(H) - radius
    slack = UNIT * (np.abs(np.diag(H)) + radius) * 2.0
    return float((disc - slack).min()) - err * SAFETY - TINY


def negative_part_upper(H, err=0.0):
    """A rigorous upper bound on ``‖[H*]₋‖_F`` (the Frobenius norm of the negative
    eigenvalues) of every symmetric ``H*`` within ``err`` (2-norm) of ``H``.

    ``‖[H*]₋‖_F`` is the Frobenius distance from ``H*`` to the PSD cone, so any symmetric
    ``Q`` with ``H* + Q ⪰ 0`` bounds it by ``‖Q‖_F``. Here ``Q = Q̂ + tI``: ``Q̂`` the
    negative part of ``H``'s computed eigendecomposition (any matrix would do; this one
    makes the bound tight) and ``t = max(0, −ℓ)`` with ``ℓ`` the
    :func:`lambda_min_lower` of ``fl(H + Q̂)`` (its rounding added to ``err``). Then
    ``‖Q‖_F ≤ ‖Q̂‖_F + t√d``, rounded up (:data:`SAFETY` on the error terms only: the
    value itself is computed to a few units of roundoff).
    """
    H = np.asarray(H, dtype=np.float64)
    d = H.shape[0]
    if d == 0:
        return 0.0
    if not (np.isfinite(H).all() and np.isfinite(err) and err >= 0):
        return np.inf
    low = np.tril(H)
    H = low + np.tril(low, -1).T
    w, V = np.linalg.eigh(H)
    neg = w < 0
    Q = (V[:, neg] * -w[neg]) @ V[:, neg].T
    Q = np.tril(Q) + np.tril(Q, -1).T  # exactly symmetric
    Hq = H + Q
    rounding = UNIT * float(np.sqrt(np.sum(Hq * Hq))) * (1.0 + gamma(d * d + 2))
    ell = lambda_min_lower(Hq, err + rounding)
    t = max(0.0, -ell)
    norm_q = float(np.sqrt(np.sum(Q * Q)))
    # the norm's own rounding and the final sum's, on top of the shift's share
    return norm_q + (norm_q * (gamma(d * d + 2) + 8.0 * UNIT) + t * np.sqrt(d)) * SAFETY

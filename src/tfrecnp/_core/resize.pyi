import numpy as np

def bilinear_f32(
    src: np.ndarray,
    out: np.ndarray,
    y0: np.ndarray,
    y1: np.ndarray,
    fy: np.ndarray,
    x0: np.ndarray,
    x1: np.ndarray,
    fx: np.ndarray,
    scale: float,
) -> None: ...
def bilinear_u8(
    src: np.ndarray,
    out: np.ndarray,
    y0: np.ndarray,
    y1: np.ndarray,
    fy: np.ndarray,
    x0: np.ndarray,
    x1: np.ndarray,
    fx: np.ndarray,
) -> None: ...

from catalog.models.gpus import (
    Architecture,
    Gpu,
    GpuAlias,
    Precision,
    Segment,
    SpecCitation,
    TensorPeak,
    Vendor,
)
from catalog.models.names import GpuNameRule
from catalog.models.prices import (
    ExchangeRate,
    ImportRun,
    Offer,
    PriceObservation,
    Provider,
    PurchasePrice,
    UnmatchedGpuName,
)

__all__ = [
    "Architecture",
    "ExchangeRate",
    "Gpu",
    "GpuAlias",
    "GpuNameRule",
    "ImportRun",
    "Offer",
    "Precision",
    "PriceObservation",
    "Provider",
    "PurchasePrice",
    "Segment",
    "SpecCitation",
    "TensorPeak",
    "UnmatchedGpuName",
    "Vendor",
]

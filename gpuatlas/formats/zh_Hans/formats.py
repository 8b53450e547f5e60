"""Simplified Chinese: numbers grouped by three with commas (8,030,261,248), as technical Chinese
writes figures; Django's default groups by four with no separator, which printed "8030261248"."""

THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3

"""The numeric bounds every input is held to, in a module that imports nothing, so the CLI's option
declarations can name them without loading the data stack."""

#: The store keeps int fields (ranks, grades, k) as 32-bit INTEGER: values are checked against this range
#: before any cast (``ragtriage.contract.field_rules``), and options and gate files the same way.
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
#: The largest cutoff k any command or gate rule takes: k is compared with 32-bit ranks in SQL.
MAX_CUTOFF = INT_MAX

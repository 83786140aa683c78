"""The measure engine's DuckDB SQL rendered as Spark SQL: the one definition of every measure
(``metrics.engine``, ``metrics.gain``, ``metrics.trec_families``, ``contract.relevance``, ``store.dedup``) is
written once for DuckDB and transpiled by SQLGlot here, never written again for Spark.

SQLGlot maps most of DuckDB's functions itself. The rewrites below are DuckDB semantics Spark spells otherwise,
each a general rule of the two dialects, not a rule of any measure:

- a decimal literal (``1.0``) is a DOUBLE, as DuckDB computes with it (Spark would keep DECIMAL(2,1) and round
  every quotient to its scale);
- ``a / b`` is NULL when ``b`` is 0, as in DuckDB (Spark's ANSI mode raises): ``try_divide``;
- ``list(x ORDER BY k)``: Spark's ``collect_list`` has no order, so the pairs are collected and sorted by key;
- ``list_transform(l, lambda x, i: ...)``: DuckDB numbers ``i`` from 1, Spark's ``transform`` from 0;
- ``l[a:b]`` (1-based, inclusive) is ``slice``; ``l[i]`` is ``try_element_at`` (NULL past the end, as DuckDB);
- ``len`` of a list is ``size``; ``list_sum`` is an ``aggregate`` (NULL for an empty list, as DuckDB);
- ``range(a, b)`` is empty when ``b <= a`` (Spark's ``sequence`` would count down);
- ``quantile_cont(x, q)`` is ``percentile(x, q)`` (both interpolate);
- ``MATERIALIZED`` hints of common table expressions are dropped (Spark plans them itself);
- ``length(CAST(x AS VARCHAR))`` stays a string length (every other ``len``/``length`` is a list's);
- ``SEMI``/``ANTI JOIN`` are Spark's ``LEFT SEMI``/``LEFT ANTI``; ``list_has_any`` is ``arrays_overlap``;
  ``list_position`` is ``array_position``; ``list_slice(l, a, b)`` is ``slice``; ``regexp_split_to_array`` is
  ``split`` (both take a regular expression); ``hash`` is ``xxhash64`` (64 bits in both, Spark's ``hash`` is 32);
- ``regexp_escape(s)`` is Java's quoting ``\\Q...\\E`` (with any ``\\E`` inside closed and reopened);
- ``, LATERAL (VALUES (a, b), ...) AS f(x, y)`` is ``LATERAL VIEW INLINE(ARRAY(STRUCT(a AS x, b AS y), ...)) f``.

A construct with no rendering here fails (``ValueError``) rather than returning a query that means something else:
``SELECT * EXCLUDE`` (name the columns), a LATERAL subquery other than VALUES.

Table names can be mapped (``tables``) so the engine's ``results``, ``qrels`` and ``cases`` read a session's
temporary views of unique names without shadowing a user's own tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import sqlglot
from sqlglot import exp


def to_spark(sql: str, tables: Mapping[str, str] | None = None, params: Mapping[str, str] | None = None) -> str:
    """``sql`` (DuckDB) as Spark SQL, with table names renamed by ``tables`` and ``$name`` parameters bound to the
    string literals ``params`` gives (SQLGlot quotes them: a value is never pasted into the text)."""
    tree = _bottom_up(sqlglot.parse_one(sql, read="duckdb"))
    if tables:
        for table in tree.find_all(exp.Table):
            if not table.db and table.name in tables:
                table.set("this", exp.to_identifier(tables[table.name]))
    for param in list(tree.find_all(exp.Parameter, exp.Placeholder)):
        if params and param.name in params:
            param.replace(exp.Literal.string(params[param.name]))
    return tree.sql(dialect="spark")


def _bottom_up(node: exp.Expr) -> exp.Expr:
    """Each node rewritten after its children, so a rewrite renders children already in Spark's terms."""
    for child in list(node.iter_expressions()):
        new = _bottom_up(child)
        if new is not child:
            child.replace(new)
    return _rewrite(node)


def _rewrite(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Literal) and not node.is_string and _is_decimal(node.this):
        return exp.cast(node, exp.DataType.build("double"))
    if isinstance(node, exp.CTE) and node.args.get("materialized") is not None:
        node.set("materialized", None)
        return node
    if isinstance(node, exp.Div):
        return exp.func("try_divide", node.this, node.expression)
    if isinstance(node, exp.Filter) and _ordered(node.this):
        return _ordered_list(node.this.this, node.expression)
    if _ordered(node) and not isinstance(node.parent, exp.Filter):
        return _ordered_list(node.this)
    if isinstance(node, exp.Transform) and isinstance(node.expression, exp.Lambda):
        _one_based_index(node.expression)
        return node
    if isinstance(node, exp.Bracket):
        return _bracket(node)
    if isinstance(node, exp.Length):
        if isinstance(node.this, exp.Cast) and node.this.to.is_type(*exp.DataType.TEXT_TYPES):
            return node
        return exp.func("size", node.this)
    if isinstance(node, exp.Join) and node.kind in ("SEMI", "ANTI") and not node.side:
        node.set("side", "LEFT")
        return node
    if isinstance(node, exp.ArrayOverlaps):
        return _call("arrays_overlap", node.this, node.expression)
    if isinstance(node, exp.Anonymous) and node.name.lower() in _FUNCTIONS:
        return _FUNCTIONS[node.name.lower()](list(node.expressions))
    if isinstance(node, exp.Star) and node.args.get("except_"):
        raise ValueError("SELECT * EXCLUDE has no Spark SQL rendering: name the columns")
    if isinstance(node, exp.Select):
        _lateral_values(node)
        return node
    if isinstance(node, exp.Anonymous) and node.name.lower() == "list_sum":
        return _list_sum(node.expressions[0])
    if isinstance(node, exp.PercentileCont) and node.expression is not None:
        return exp.func("percentile", node.this, node.expression)
    if isinstance(node, exp.GenerateSeries):
        return _range(node)
    return node


def _is_decimal(text: str) -> bool:
    return "." in text or "e" in text.lower()


def _ordered(node: exp.Expr) -> bool:
    return isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order)


def _ordered_list(order: exp.Order, where: exp.Expr | None = None) -> exp.Expr:
    """``list(v ORDER BY k [DESC]) [FILTER (WHERE ...)]``: (k, v) pairs collected, sorted by k, their values
    kept."""
    keys = order.expressions
    if len(keys) != 1:
        raise ValueError(f"an ordered list needs one sort key to render for Spark: {order.sql('duckdb')}")
    key = keys[0]
    pair = exp.func("named_struct", exp.Literal.string("k"), key.this.copy(), exp.Literal.string("v"), order.this)
    collected: exp.Expr = exp.func("collect_list", pair)
    if where is not None:
        collected = exp.Filter(this=collected, expression=where)
    pairs = exp.func("array_sort", collected)
    if key.args.get("desc"):
        pairs = exp.func("reverse", pairs)
    return sqlglot.parse_one(f"transform({pairs.sql('spark')}, _kv -> _kv.v)", read="spark")


def _one_based_index(fn: exp.Lambda) -> None:
    """A two-argument lambda of a list transform: every use of its index gets DuckDB's 1-based value."""
    if len(fn.expressions) != 2:
        return
    index = fn.expressions[1].name
    for ident in list(fn.this.find_all(exp.Identifier)):
        parent = ident.parent
        if ident.name != index or isinstance(parent, exp.Dot):
            continue
        if isinstance(parent, exp.Column):
            if parent.table or ident is not parent.this:
                continue
            target: exp.Expr = parent
        else:
            target = ident
        target.replace(exp.Paren(this=exp.Add(this=target.copy(), expression=exp.Literal.number(1))))


def _bracket(node: exp.Bracket) -> exp.Expr:
    (index,) = node.expressions
    if isinstance(index, exp.Slice):
        start, end = index.this, index.expression
        length = exp.Add(this=exp.Sub(this=end, expression=start.copy()), expression=exp.Literal.number(1))
        return exp.func("slice", node.this, start, length)
    # SQLGlot holds DuckDB's 1-based index as 0-based; try_element_at counts from 1
    return exp.func("try_element_at", node.this, exp.Add(this=index, expression=exp.Literal.number(1)))


def _list_sum(values: exp.Expr) -> exp.Expr:
    # NULL for an empty list, as DuckDB's list_sum (the lists summed here hold no NULL)
    return sqlglot.parse_one(
        f"aggregate({values.sql('spark')}, CAST(NULL AS DOUBLE), (_acc, _x) -> coalesce(_acc, 0) + _x)", read="spark"
    )


def _range(node: exp.GenerateSeries) -> exp.Expr:
    start, end = node.args["start"].sql("spark"), node.args["end"].sql("spark")
    last = f"({end}) - 1" if node.args.get("is_end_exclusive") else f"({end})"
    return sqlglot.parse_one(
        f"CASE WHEN {last} >= {start} THEN sequence({start}, {last}) ELSE array() END", read="spark"
    )


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    """A call of Spark's function ``name`` as written: ``exp.func`` would read some names as SQLGlot expressions
    with their own rendering (``split`` as a literal split, its pattern quoted)."""
    return exp.Anonymous(this=name, expressions=list(args))


def _list_slice(args: list[exp.Expr]) -> exp.Expr:
    # DuckDB list_slice(l, begin, end) is 1-based and inclusive; Spark slice(l, start, length)
    begin, end = args[1], args[2]
    length = exp.Add(this=exp.Sub(this=end, expression=begin.copy()), expression=exp.Literal.number(1))
    return _call("slice", args[0], begin, length)


def _regexp_escape(args: list[exp.Expr]) -> exp.Expr:
    quoted = _call("replace", args[0], exp.Literal.string("\\E"), exp.Literal.string("\\E\\\\E\\Q"))
    return _call("concat", exp.Literal.string("\\Q"), quoted, exp.Literal.string("\\E"))


_FUNCTIONS: dict[str, Callable[[list[exp.Expr]], exp.Expr]] = {
    "list_slice": _list_slice,
    "regexp_escape": _regexp_escape,
    "regexp_split_to_array": lambda a: _call("split", *a),
    "hash": lambda a: _call("xxhash64", *a),
    "list_position": lambda a: _call("array_position", *a),
}


def _lateral_values(node: exp.Select) -> None:
    """``, LATERAL (VALUES (a, b), ...) AS f(x, y)`` becomes ``LATERAL VIEW INLINE(ARRAY(STRUCT(a AS x, ...)))``."""
    for join in list(node.args.get("joins") or []):
        lateral = join.this
        if not isinstance(lateral, exp.Lateral) or not isinstance(lateral.this, exp.Subquery):
            continue
        values = lateral.this.this
        if not isinstance(values, exp.Values):
            raise ValueError("a LATERAL subquery other than VALUES has no Spark SQL rendering here")
        alias = lateral.args["alias"]
        names = [c.name for c in alias.columns]
        rows = [
            exp.Struct(
                expressions=[
                    exp.PropertyEQ(this=exp.to_identifier(n), expression=v)
                    for n, v in zip(names, row.expressions, strict=True)
                ]
            )
            for row in values.expressions
        ]
        join.pop()
        node.append(
            "laterals",
            exp.Lateral(
                this=exp.Inline(this=exp.Array(expressions=rows)),
                view=True,
                alias=exp.TableAlias(this=alias.this, columns=[exp.to_identifier(n) for n in names]),
            ),
        )

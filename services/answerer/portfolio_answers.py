"""Answers about the user's own portfolio, written from the facts the portfolio tools
fetched (services/tools/portfolio.py): every figure shown is one of those facts, in cents
for the user's own money, and every sentence cites the rows or closes it came from.

A question the tools could not answer for an account it could not place (two accounts fit
the words) is answered with the question back: which account. What the question asked that no
tool could (a comparison with a market index, whose prices finq does not hold) is said in
the answer, never left out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from services.answerer.passages import compose_passages_answer
from shared.contracts.answers import Citation
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, Source
from shared.portfolio.ledger import HOLDING_PERFORMANCE_METHOD, TIME_WEIGHTED_RETURN_METHOD
from shared.tools import RankHoldingsArgs
from shared.value_formatting import format_per_share

PORTFOLIO = "PORTFOLIO"


def cents(value: float) -> str:
    """The user's own money to the cent: "$1,234.56", "-$12.00"."""
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


def shares(value: float) -> str:
    text = f"{value:,.4f}".rstrip("0").rstrip(".")
    return f"{text} share{'' if value == 1 else 's'}"


def percent(value: float) -> str:
    """A percentage with one decimal, or as many more as keep it within a fiftieth of its
    value (the validator's tolerance): "50.1%", but "1.27%" and "0.043%", never "0.0%"."""
    decimals = 1
    if value:
        decimals = max(1, math.ceil(-math.log10(0.04 * abs(value))))
    return f"{value:.{decimals}f}%"


class Citing:
    """Numbers citations in the order sentences first use their sources."""

    def __init__(self, sources: Iterable[Source]) -> None:
        self.by_id = {source.source_id: source for source in sources}
        self.order: list[str] = []

    def mark(self, *facts: Fact | None) -> str:
        numbers = []
        for fact in facts:
            if fact is None or fact.source_id not in self.by_id:
                continue
            if fact.source_id not in self.order:
                self.order.append(fact.source_id)
            number = self.order.index(fact.source_id) + 1
            if number not in numbers:
                numbers.append(number)
        return "".join(f" [{n}]" for n in numbers)

    def citations(self) -> list[Citation]:
        return [
            Citation(
                source_id=source.source_id,
                label=source.label,
                form=source.form,
                accession=source.accession,
                url=source.url,
            )
            for source in (self.by_id[source_id] for source_id in self.order)
        ]


def _by(facts: Iterable[Fact], *keys: str) -> dict[tuple[str, ...], dict[str, Fact]]:
    """Facts grouped by (symbol, account-in-label) and then by metric."""
    grouped: dict[tuple[str, ...], dict[str, Fact]] = defaultdict(dict)
    for fact in facts:
        grouped[tuple(getattr(fact, key) for key in keys)][fact.metric] = fact
    return grouped


def _account_of(fact: Fact) -> str:
    """The account a holding fact is of: its label ends "... in <account>"."""
    return fact.metric_label.rsplit(" in ", 1)[-1]


def compose_positions(facts: list[Fact], cite: Citing) -> list[str]:
    holding_facts = [f for f in facts if f.symbol != PORTFOLIO and f.metric == "shares_held"]
    sentences = []
    for held in holding_facts:
        account = _account_of(held)
        mine = {
            f.metric: f
            for f in facts
            if f.symbol == held.symbol
            and (f.metric in ("last_close",) or _account_of(f) == account)
        }
        name = f"{held.company} ({held.symbol})"
        if held.value:
            sentence = f"In {account} you hold {shares(held.value)} of {name}"
            basis, average = mine.get("cost_basis"), mine.get("average_cost")
            if basis and average:
                sentence += (
                    f", bought for {cents(basis.value)} "
                    f"(an average cost of {format_per_share(average.value)} a share"
                )
                fifo = mine.get("cost_basis_fifo")
                if fifo and abs(fifo.value - basis.value) >= 0.005:
                    sentence += f"; {cents(fifo.value)} by FIFO lots"
                sentence += ")"
            sentences.append(sentence + "." + cite.mark(held, basis))
            close, value = mine.get("last_close"), mine.get("market_value")
            gain, ret = mine.get("unrealized_gain"), mine.get("unrealized_return")
            if close and value and gain:
                word = "gain" if gain.value >= 0 else "loss"
                text = (
                    f"At the {close.period_end} close of {format_per_share(close.value)} "
                    f"they are worth {cents(value.value)}: an unrealized {word} of "
                    f"{cents(abs(gain.value))}"
                )
                if ret:
                    text += f" ({percent(ret.value)} since purchase)"
                sentences.append(text + "." + cite.mark(close))
        else:
            sentences.append(f"You no longer hold {name} in {account}." + cite.mark(held))
        realized, realized_fifo = mine.get("realized_gain"), mine.get("realized_gain_fifo")
        if realized:
            text = (
                f"Your sales of {held.symbol} there{_span_of(realized)} realized "
                f"{cents(realized.value)} (average cost"
            )
            if realized_fifo and abs(realized_fifo.value - realized.value) >= 0.005:
                text += f"; {cents(realized_fifo.value)} by FIFO lots"
            sentences.append(text + ")." + cite.mark(realized))
        dividends = mine.get("dividends_received")
        if dividends:
            sentences.append(
                f"{held.symbol} paid you {cents(dividends.value)} in dividends there"
                f"{_span_of(dividends)}." + cite.mark(dividends)
            )
    return sentences


def _span_of(fact: Fact) -> str:
    """ " from 2022-01-01 to 2022-12-31" for a figure of a span of days; "" for one of a day."""
    return f" from {fact.period_start} to {fact.period_end}" if fact.period_start else ""


def compose_realized(facts: list[Fact], cite: Citing) -> list[str]:
    """Realized gains asked alone: each holding's sales, and all of them together."""
    sentences = []
    fifo = {(f.symbol, _account_of(f)): f for f in facts if f.metric == "realized_gain_fifo"}
    sold = [f for f in facts if f.metric == "realized_gain" and f.symbol != PORTFOLIO]
    for realized in sold:
        account = _account_of(realized)
        by_lots = fifo.get((realized.symbol, account))
        word = "gain" if realized.value >= 0 else "loss"
        text = (
            f"Your sales of {realized.company} ({realized.symbol}) in {account}"
            f"{_span_of(realized)} realized a {word} of {cents(abs(realized.value))} "
            "(average cost"
        )
        if by_lots and abs(by_lots.value - realized.value) >= 0.005:
            text += f"; {cents(by_lots.value)} by FIFO lots"
        sentences.append(text + ")." + cite.mark(realized))
    total = next((f for f in facts if f.metric == "realized_gain_total"), None)
    total_fifo = next((f for f in facts if f.metric == "realized_gain_fifo_total"), None)
    if total and len(sold) > 1:
        word = "gain" if total.value >= 0 else "loss"
        text = (
            f"In all, your sales{_span_of(total)} realized a {word} of "
            f"{cents(abs(total.value))} (average cost"
        )
        if total_fifo and abs(total_fifo.value - total.value) >= 0.005:
            text += f"; {cents(total_fifo.value)} by FIFO lots"
        sentences.append(text + ")." + cite.mark(total))
    return sentences


def compose_account_values(facts: list[Fact], cite: Citing) -> list[str]:
    sentences = []
    accounts = _by((f for f in facts if f.symbol == PORTFOLIO), "company")
    total = next((f for f in facts if f.metric == "portfolio_value"), None)
    if total:
        sentences.append(
            f"All your accounts were worth {cents(total.value)} on {total.period_end}."
            + cite.mark(total)
        )
    for (account,), metrics in accounts.items():
        value = metrics.get("account_value")
        if value is None:
            continue
        holdings, cash = metrics.get("holdings_value"), metrics.get("cash_total")
        parts = []
        if holdings:
            parts.append(f"{cents(holdings.value)} in holdings")
        if cash:
            parts.append(f"{cents(cash.value)} in cash")
        sentences.append(
            f"{account} was worth {cents(value.value)} on {value.period_end}"
            + (f" ({' and '.join(parts)})" if parts else "")
            + "."
            + cite.mark(value)
        )
    return sentences


def compose_cash(facts: list[Fact], cite: Citing) -> list[str]:
    sentences = []
    for (account,), metrics in _by((f for f in facts if f.symbol == PORTFOLIO), "company").items():
        total = metrics.get("cash_total")
        if total is None or "account_value" in metrics:
            continue
        settled, unsettled = metrics.get("cash_settled"), metrics.get("cash_unsettled")
        text = f"{account} holds {cents(total.value)} in cash on {total.period_end}"
        if settled and unsettled and unsettled.value:
            text += f": {cents(settled.value)} settled and {cents(unsettled.value)} not yet settled"
        elif settled:
            text += ", all of it settled"
        sentences.append(text + "." + cite.mark(total))
    everything = next((f for f in facts if f.metric == "cash_all"), None)
    if everything:
        sentences.append(
            f"Across your accounts that is {cents(everything.value)}." + cite.mark(everything)
        )
    return sentences


_DONE = {
    "buy": "bought",
    "sell": "sold",
    "dividend": "received a dividend",
    "interest": "received interest",
    "deposit": "deposited",
    "withdrawal": "withdrew",
    "transfer": "transferred",
    "fee": "paid a fee",
}


def compose_activity(facts: list[Fact], cite: Citing) -> list[str]:
    rows: dict[str, dict[str, Fact]] = defaultdict(dict)
    for fact in facts:
        if fact.source_id.startswith("portfolio:row:"):
            rows[fact.source_id][fact.metric.rsplit("_", 1)[-1]] = fact
    sentences = []
    for metrics in rows.values():
        amount = metrics["amount"]
        kind = amount.metric.rsplit("_", 1)[0]
        day = amount.period_end
        if kind in ("buy", "sell") and "quantity" in metrics and "price" in metrics:
            text = (
                f"On {day} you {_DONE[kind]} {shares(metrics['quantity'].value)} of "
                f"{amount.company} ({amount.symbol}) at {format_per_share(metrics['price'].value)}"
                f" a share, {cents(amount.value)} in all"
            )
            if "fees" in metrics:
                text += f" with {cents(metrics['fees'].value)} of fees"
        elif amount.symbol != PORTFOLIO:
            text = f"On {day} you {_DONE[kind]} of {cents(amount.value)} from {amount.company}"
        else:
            text = f"On {day} you {_DONE[kind]} {cents(amount.value)}"
            if kind in ("deposit", "withdrawal", "transfer", "fee", "interest"):
                text += f" ({amount.company})"
        sentences.append(text + "." + cite.mark(amount))
    totals = [f for f in facts if f.metric.endswith("_total") and f.symbol == PORTFOLIO]
    if len(rows) > 1:
        for total in totals:
            kind = total.metric.removesuffix("_total")
            sentences.append(
                f"In all, the {kind} rows from {total.period_start} to {total.period_end} "
                f"come to {cents(total.value)}." + cite.mark(total)
            )
    return sentences


def compose_performance(facts: list[Fact], cite: Citing) -> list[str]:
    metrics = {f.metric: f for f in facts if f.symbol == PORTFOLIO}
    twr = metrics.get("time_weighted_return")
    if twr is None:
        return []
    gain, start, end = metrics.get("gain"), metrics.get("start_value"), metrics.get("end_value")
    flows = metrics.get("net_deposits")
    sentences = [
        f"From {twr.period_start} to {twr.period_end} {twr.company} returned "
        f"{percent(twr.value)} ({TIME_WEIGHTED_RETURN_METHOD})." + cite.mark(twr)
    ]
    if gain and start and end:
        text = (
            f"It went from {cents(start.value)} to {cents(end.value)}"
            + (f" with {cents(flows.value)} of net deposits" if flows and flows.value else "")
            + f": a {'gain' if gain.value >= 0 else 'loss'} of {cents(abs(gain.value))}, "
            "deposits and withdrawals not counted as gains."
        )
        sentences.append(text)
    return sentences


def compose_ranking(facts: list[Fact], cite: Citing, route: RouteDecided) -> list[str]:
    asked = next(
        (c.arguments for c in route.tool_calls if isinstance(c.arguments, RankHoldingsArgs)),
        RankHoldingsArgs(),
    )
    if asked.by in ("value", "weight"):
        return compose_size_ranking(facts, cite, asked)
    ranked = _by((f for f in facts if f.metric in ("holding_gain", "holding_return")), "symbol")
    if not ranked:
        return []
    order = asked.order
    by = "in dollars" if asked.by == "usd" else "by percent"
    first = next(iter(ranked.values()))["holding_gain"]
    sentences = [
        f"Your {order} holdings {by} from {first.period_start} to {first.period_end}, "
        f"{order} first ({HOLDING_PERFORMANCE_METHOD}):"
    ]
    # No list numbers: "2." would read as a figure of the sentence before it.
    for (symbol,), metrics in ranked.items():
        gain = metrics["holding_gain"]
        ret = metrics.get("holding_return")
        text = f"{gain.company} ({symbol}): {cents(gain.value)}"
        if ret:
            # Not "(24.0%)": a figure in brackets reads as a negative one.
            text += f", {percent(ret.value)}"
        sentences.append(text + "." + cite.mark(gain))
    return sentences


def compose_size_ranking(facts: list[Fact], cite: Citing, asked: RankHoldingsArgs) -> list[str]:
    """Holdings by market value or by weight (a share of all the holdings' value) on a day."""
    ranked = _by((f for f in facts if f.metric in ("holding_value", "holding_weight")), "symbol")
    if not ranked:
        return []
    day = next(iter(ranked.values()))["holding_value"].period_end
    largest = asked.order == "best"
    if asked.by == "weight":
        lead = (
            f"Your holdings by weight, each one's share of your holdings' value on {day}, "
            f"{'heaviest' if largest else 'lightest'} first:"
        )
    else:
        lead = (
            f"Your holdings by market value on {day}, {'largest' if largest else 'smallest'} first:"
        )
    sentences = [lead]
    for (symbol,), metrics in ranked.items():
        value, weight = metrics["holding_value"], metrics.get("holding_weight")
        text = f"{value.company} ({symbol}): "
        if asked.by == "weight" and weight:
            # Not "(…)": an amount in brackets reads as a negative one.
            text += f"{percent(weight.value)}, worth {cents(value.value)}"
        else:
            text += cents(value.value)
            if weight:
                text += f", {percent(weight.value)} of your holdings' value"
        sentences.append(text + "." + cite.mark(value))
    total = next((f for f in facts if f.metric == "holdings_value"), None)
    if total:
        where = " in that account" if asked.account else ""
        sentences.append(
            f"All your holdings{where} were worth {cents(total.value)} on {total.period_end}."
            + cite.mark(total)
        )
    return sentences


def compose_screen(facts: list[Fact], cite: Citing, route: RouteDecided) -> list[str]:
    share = next((f for f in facts if f.metric == "screen_share"), None)
    matching = [f for f in facts if f.metric == "screen_match"]
    figures = [f for f in facts if f.source_id.startswith("xbrl:")]
    if share is None:
        return []
    sentences = []
    label = figures[0].metric_label.lower() if figures else "figure"
    for fact in sorted(figures, key=lambda f: (f.symbol, f.fiscal_year)):
        value = f"{fact.value:,.1f}%" if fact.unit == "%" else cents(fact.value)
        if fact.unit == "USD" and abs(fact.value) >= 1e6:
            value = f"${fact.value / 1e9:,.1f} billion"
        sentences.append(
            f"{fact.company}'s {label} in fiscal {fact.fiscal_year} was {value}." + cite.mark(fact)
        )
    names = [f"{f.company} ({f.symbol})" for f in matching]
    matched = next((f for f in facts if f.metric == "screen_value"), None)
    total = next((f for f in facts if f.metric == "holdings_value"), None)
    if names:
        verb = "meets" if len(names) == 1 else "meet"
        sentences.append(f"Of your holdings, {' and '.join(names)} {verb} that.")
    else:
        sentences.append("None of your holdings meets that.")
    if matched and total:
        sentences.append(
            f"They make up {percent(share.value)} of your holdings' value on "
            f"{share.period_end}: {cents(matched.value)} of {cents(total.value)}."
            + cite.mark(share)
        )
    return sentences


def draft_portfolio(
    route: RouteDecided,
    facts: list[Fact],
    sources: list[Source],
    missing: list[str],
    passages: list,  # type: ignore[type-arg]
    errors: list,  # type: ignore[type-arg]
) -> tuple[str, list[Citation]]:
    for error in errors:
        if error.code == "ambiguous_account":
            return error.message, []
        if error.code == "unknown_account":
            return f"I could not answer that: {error.message}.", []
        if error.code == "no_portfolio":
            return error.message[0].upper() + error.message[1:] + ".", []
    tools = {call.tool for call in route.tool_calls}
    if "search_holdings_documents" in tools:
        # The passages number their own citations; the holdings sentence needs none (its
        # figures are facts the validator checks all the same).
        values = [f for f in facts if f.metric == "market_value"]
        lead = ""
        if values:
            named = " and ".join(f"{f.company} ({f.symbol}, {cents(f.value)})" for f in values)
            lead = f"Your largest holdings on {values[0].period_end} are {named}. "
        text, quoted = compose_passages_answer(route.question, passages, sources)
        return lead + text, quoted
    cite = Citing(sources)
    sentences: list[str] = []
    if "get_account_value" in tools:
        sentences += compose_account_values(facts, cite)
    reading = route.understood.portfolio
    if "get_positions" in tools:
        # Realized gains asked alone, of one holding or all: that figure, not each position.
        realized_alone = (
            reading is not None and reading.realized and route.intent == "portfolio_position"
        )
        sentences += (
            compose_realized(facts, cite) if realized_alone else compose_positions(facts, cite)
        )
    if "get_cash_balance" in tools:
        sentences += compose_cash(facts, cite)
    if "get_portfolio_activity" in tools:
        sentences += compose_activity(facts, cite)
    if "get_portfolio_performance" in tools:
        sentences += compose_performance(facts, cite)
    if "rank_holdings" in tools:
        sentences += compose_ranking(facts, cite, route)
    if "screen_holdings" in tools:
        sentences += compose_screen(facts, cite, route)
    if reading is not None and reading.benchmark:
        # No index is held: the comparison asked is said not to be made, never dropped.
        sentences.append(
            f"finq holds no prices for {reading.benchmark}, so I could not compare your "
            "portfolio with it; the figures here are your portfolio's alone."
        )
    citations = cite.citations()
    if missing:
        sentences.append("Note: " + "; ".join(dict.fromkeys(missing)) + ".")
    if not sentences:
        sentences.append("I found nothing in your portfolio for that.")
    return " ".join(sentences), citations

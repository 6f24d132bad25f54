"""The words people use about their own money, as word classes: regular-expression fragments,
matched case-insensitively, each a group that needs no other around it.

The portfolio intents' cues (shared/intents/portfolio_*.py) and the router's portfolio reader
(services/router/portfolio_reading.py) are built from these same classes, so a word added
here is both scored (which kind of portfolio question) and read (what the question names).
Each class is a kind of word, never a sentence: a cue or a reading puts two or three of them
side by side ("my" + an account, a superlative + a holding).
"""

from __future__ import annotations

# The user speaking of themselves.
FIRST_PERSON = r"(?:i|me|my|mine|we|us|our|ours)"
# The user's own accounts, named by their kind; "401(k)" ends in a bracket, so a pattern ends
# these with `END` rather than a word boundary.
ACCOUNT_KIND = (
    r"(?:roth(?:\s+ira)?|(?:traditional\s+|rollover\s+|sep\s+)?ira|401\s?\(?k\)?|403\s?\(?b\)?"
    r"|hsa|brokerage|taxable|cash[\s-]+management)"
)
# The kinds no one but an account holder speaks of as "the" one.
PERSONAL_ACCOUNT_KIND = (
    r"(?:roth(?:\s+ira)?|(?:traditional\s+|rollover\s+|sep\s+)?ira|401\s?\(?k\)?|403\s?\(?b\)?|hsa)"
)
ACCOUNT = rf"(?:{ACCOUNT_KIND}(?:\s+(?:account|acct)s?)?|accounts?|acct)"
END = r"(?![\w(])"
# What the user holds, as a whole or one by one.
HOLDING = (
    r"(?:holdings?|positions?|investments?|stocks?|shares|equities|securities|assets|funds"
    r"|etfs?|tickers|names|companies|company)"
)
# Verbs of owning, said by the user: "I hold", "we still own". "Have" only where it means
# owning ("what I have in my IRA", "everything I have"), not "I have a question".
OWNING = (
    r"(?:own|owned|hold|held|(?:have|had)(?=\s+(?:in|across|at|with|invested)\b|\s*[?.!]*\s*$))"
)
# Income the user receives from what they hold, and the verbs of receiving it. A company
# pays dividends; a holder receives, collects or earns them.
INCOME = r"(?:dividends?|distributions?|interest|income|payouts?)"
RECEIVING = r"(?:received|receive|receiving|got|get|collected|collect|earned|earn)"
PAID_TO_HOLDERS = r"(?:dividends?|distributions?)"
# Sizes of a holding, largest and smallest, and the words of its weight in the portfolio.
LARGEST = r"(?:biggest|largest|heaviest|greatest)"
SMALLEST = r"(?:smallest|tiniest|lightest)"
WEIGHT = (
    r"(?:weigh(?:s|ed|ing|t|ts|ted|ting|tings)?|concentrat\w*"
    r"|(?:%|percent(?:age)?|share|portion|proportion|fraction|part|chunk)\s+of\s+"
    r"(?:the|my|our|your)\s+(?:total\s+|overall\s+|whole\s+|entire\s+)?"
    r"(?:portfolio|holdings|accounts?|investments|money))"
)
VALUE = r"(?:(?:market\s+|dollar\s+)?value|size|worth|dollar\s+amount)"
# A holding's move over a span, most or least: "down the most", "gained the least".
MOVED = (
    r"(?:up|down|gain(?:ed|ing)?|los[te]|losing|made|make|making|rose|fell|dropped|declined"
    r"|sank|slid|grew|returned|went\s+(?:up|down))"
)
# What a ranking is ordered by and in which direction: "worst first", "largest to smallest".
RANK_END = r"(?:best|worst|biggest|largest|smallest|heaviest|lightest|highest|lowest)"
# Realized gains: the gains of the shares sold ("realized", "my gain on sales").
REALIZED = (
    r"(?:reali[sz]ed?|(?:gain|profit|loss)\w*\s+(?:on|from)\s+(?:my\s+|the\s+|our\s+)?"
    r"(?:sales?|selling|sold))"
)
# Money moved into or out of the accounts, in words: "put money in", "took cash out".
MONEY_IN = (
    r"(?:deposit\w*|contribut\w*|(?:put|add\w*)\s+(?:(?:some|any|more)\s+)?"
    r"(?:money|cash|funds)\s+in(?:to)?)"
)
MONEY_OUT = (
    r"(?:withdr[ae]w\w*|(?:take|took|taken|taking|pull\w*)\s+(?:(?:some|any)\s+)?"
    r"(?:(?:money|cash|funds)\s+)?out)"
)
# Market indexes a portfolio is compared with, and the words of comparing. finq holds no
# index's prices, so a comparison with one is said to be impossible, never dropped.
INDEX = (
    r"(?:s\s?&\s?p(?:[\s-]?\d{3})?(?:\s+index)?|spx|nasdaq(?:[\s-]?100|\s+composite)?|ndx"
    r"|dow(?:\s+jones)?(?:\s+industrials?(?:\s+average)?)?|djia|russell[\s-]?\d{4}"
    r"|wilshire[\s-]?\d{4}|msci(?:\s+(?:world|eafe|acwi|emerging\s+markets))?"
    r"|ftse(?:[\s-]?\d{3})?|nikkei(?:[\s-]?\d{3})?"
    r"|the\s+(?:(?:overall|broad|broader|whole|total|stock|general|us|u\.s\.)\s+)*market"
    r"(?!\s*(?:value|cap\w*|price|close|order)s?\b)"
    r"|(?:an?|the)\s+(?:market\s+|stock\s+)?(?:index|benchmark)(?!\s+funds?\b))"
)
COMPARING = (
    r"(?:beat|beats|beating|beaten|outperform\w*|underperform\w*|outpac\w*|compar\w*|versus|vs\.?"
    r"|against|relative\s+to|benchmark\w*|lag(?:ged|ging|s)?|trail(?:ed|ing|s)?|stack\w*\s+up"
    r"|keep\s+up\s+with|kept\s+up\s+with|(?:better|worse)\s+than)"
)

# The user speaking of their own account ("my Roth IRA", "our joint account", "my 401(k)") or
# of what they own ("I hold", "we still own"): a question about their money, whichever kind.
# Every portfolio intent has it as a cue of the same weight, so it never decides which kind
# (the overview, the accounts and what they hold, has it twice: the kind when nothing sharper
# is said). "My accounts" alone is the overview's own cue.
OWNERSHIP = (
    r"\b(?:my|our)\s+(?:[\w()'’&.-]+\s+){0,2}?"
    rf"(?:{ACCOUNT_KIND}(?:\s+(?:account|acct)s?)?|[\w&.-]+\s+(?:account|acct)s?){END}"
    rf"|\b(?:i|we)\s+(?:(?:still|currently|now|also)\s+)?{OWNING}"
    # "What did the 401(k) hold", "the Roth IRA's return this year": one account, so the
    # user's own ("a Roth IRA" is any, a definition's). A kind that is also an everyday word
    # ("the brokerage") needs "account" after it.
    rf"|\bthe\s+(?:{PERSONAL_ACCOUNT_KIND}(?:\s+(?:account|acct))?|{ACCOUNT_KIND}\s+(?:account|acct))"
    rf"{END}"
)

"""A user's own portfolio: the activity they bring (trades, income, transfers), and what is
derived from it (positions, cost basis, cash, performance). Nothing here is stored as a
free-typed total: every figure is computed from the activity rows."""

"""GET /v1/companies: the companies finq can answer for, and what it holds of each."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from services.gateway.dependencies import Caller, Deps
from services.gateway.openapi import error_responses
from shared.company_holdings import CompanyHoldings, list_company_holdings
from shared.db import acting_as


class CompanyList(BaseModel):
    """GET /v1/companies: every company finq holds, by name."""

    companies: list[CompanyHoldings]


router = APIRouter()


@router.get(
    "/v1/companies",
    response_model=CompanyList,
    responses=error_responses(401, 429, 503),
)
async def companies(deps: Deps, caller: Caller) -> CompanyList:
    """The companies finq can answer for, by name: tickers, CIK, the end of the fiscal
    year, the fiscal years of the figures held, the days of the prices held, and the
    documents to search (public filings, and the caller's own uploads naming it)."""
    # Acting for the caller: their uploads are counted, and nobody else's.
    return CompanyList(companies=await list_company_holdings(acting_as(deps.pool, caller)))

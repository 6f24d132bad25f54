"""The gateway's HTTP routes, one APIRouter per group of paths; app.py includes them (in the
order of its ROUTERS) with its middleware and error handlers around them."""

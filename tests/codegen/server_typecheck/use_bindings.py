"""Code written against generated server bindings, checked by mypy --strict.

Lines marked ``# E: <code>`` must get exactly that error; every other line
must be clean (tests/codegen/test_server_bindings_peers.py)."""

from __future__ import annotations

from everything import McpServersEverything
from kitchen import BindingsKitchen, Flight, Node
from sdk_structured import SdkStructured
from ts_geo import DistanceInputFrom, DistanceInputTo, TsGeo

from mcpbind._client.client import ClientSession


async def correct(session: ClientSession) -> float:
    everything = McpServersEverything(session)
    weather = await everything.get_structured_content(location="Chicago")
    total: float = weather.temperature + weather.humidity
    await everything.get_sum(a=1, b=2.5)
    kitchen = BindingsKitchen(session)
    trip = await kitchen.plan_trip(
        destination="Lyon", leg=Flight(number="AF12"), when="2026-07-28", stops=Node(name="a")
    )
    nights: int = trip.nights
    forecast = await SdkStructured(session).get_forecast(city="Oslo", days=2)
    first: float = forecast.temperatures[0]
    distance = await TsGeo(session).distance(
        from_=DistanceInputFrom(x=0, y=0), to=DistanceInputTo(x=3, y=4), unit="km"
    )
    return total + nights + first + distance.distance


async def wrong(session: ClientSession) -> None:
    everything = McpServersEverything(session)
    await everything.get_sum(a="one", b=2)  # E: arg-type
    await everything.get_sum(a=1)  # E: call-arg Missing named argument "b"
    await everything.get_sum(a=1, b=2, c=3)  # E: call-arg Unexpected keyword argument "c"
    await everything.get_structured_content(location="Paris")  # E: arg-type
    weather = await everything.get_structured_content(location="Chicago")
    label: str = weather.temperature  # E: assignment
    print(label)
    weather.wind  # E: attr-defined
    trip = await BindingsKitchen(session).plan_trip(
        destination="Lyon", leg=Flight(number="AF12"), when="x", stops=Node(name="a")
    )
    trip.nights.upper()  # E: attr-defined

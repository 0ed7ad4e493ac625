"""The dashboard page in a real browser (Debian's chromium through chromium-driver and Selenium), against a real
mosquitto and real `coaty-edge run` agents whose sensors are thermal zones in a sysfs tree the test writes.

Run by .ci/run after the build: `python3 -m pytest Tests/Browser` (COATY_EDGE_BINARY names the coaty-edge under
test, coaty-edge-dashboard beside it; by default those of `swift build --show-bin-path`).
"""

import base64
import json
import os
import signal
import urllib.error
import urllib.request

import pytest
from selenium.webdriver.common.by import By

from dashboard_fixture import Scenario, wait_until

ROUTER_RULES = os.path.join(os.path.dirname(__file__), "..", "..", "rules", "temperature-demo")


@pytest.fixture(scope="module")
def scenario():
    with Scenario(rules=ROUTER_RULES) as scenario:
        yield scenario


def cards(browser, selector):
    return browser.find_elements(By.CSS_SELECTOR, selector)


def route_pairs(browser):
    """(source id, actor id) of every route row the page shows."""
    return sorted(
        (row.get_attribute("data-source-id"), row.get_attribute("data-actor-id"))
        for row in cards(browser, "tr.route"))


def value_text(browser, source_id):
    found = cards(browser, f'article.source[data-source-id="{source_id}"] .value-text')
    return found[0].text if found else None


def test_agents_values_routes_and_devices_appear(scenario):
    browser = scenario.browser
    browser.get(scenario.url)
    wait_until("four agents online", lambda: len(cards(browser, 'article.agent[data-state="online"]')) == 4)
    names = sorted(card.find_element(By.TAG_NAME, "h3").text for card in cards(browser, "article.agent"))
    assert names == ["Emergency-state actor", "Normal-state actor", "Temperature router", "Thermal sensors"]

    # Values as text with the unit of the value type, and who receives them.
    for source_id, temperature in Scenario.SOURCES.items():
        wait_until(f"the value of {source_id}", lambda: value_text(browser, source_id) == f"{temperature} °C")
    receivers = cards(browser, f'article.source[data-source-id="{Scenario.SOC}"] .receivers')[0].text
    assert receivers == "goes to Display (normal operation)"

    # Routes: both sources to the normal-state actor, by the rule that matched.
    wait_until("both routes", lambda: route_pairs(browser) == sorted(
        [(Scenario.SOC, Scenario.NORMAL_ACTOR), (Scenario.BOARD, Scenario.NORMAL_ACTOR)]))
    rules = {row.find_elements(By.TAG_NAME, "td")[2].text for row in cards(browser, "tr.route")}
    assert rules == {"temperature-normal"}

    # Device health in words, the IO context with its properties, the shared object with its keys and version.
    devices = [item.text for item in cards(browser, f'article.agent[data-agent-id="{Scenario.SENSORS_AGENT}"] .devices li')]
    assert devices == ["thermal zone 0 (cpu-thermal): ok", "thermal zone 1 (board-thermal): ok"]
    context = cards(browser, 'article.context[data-context="TemperatureMeasurement"]')[0]
    assert context.find_element(By.CSS_SELECTOR, 'tr[data-key="operatingState"] td').text == '"normal"'
    wait_until("the shared object", lambda: len(cards(browser, 'table.shared-object[data-name="setpoints"]')) == 1)
    shared = cards(browser, 'table.shared-object[data-name="setpoints"]')[0]
    assert "version 0, hosted by Temperature router" in shared.find_element(By.TAG_NAME, "caption").text
    assert shared.find_element(By.CSS_SELECTOR, "td").text == "60"
    # Charts are drawn by Debian's dygraphs.
    wait_until("a chart", lambda: len(cards(browser, f'article.source[data-source-id="{Scenario.SOC}"] .chart canvas')) > 0)


def test_a_value_change_shows_without_a_reload(scenario):
    browser = scenario.browser
    browser.execute_script("window.sameDocument = 'yes'")
    scenario.write_temperature(0, 51234)
    wait_until("the new value", lambda: value_text(browser, Scenario.SOC) == "51.234 °C")
    assert browser.execute_script("return window.sameDocument") == "yes"


def test_a_device_failure_shows_with_its_reason(scenario):
    browser = scenario.browser
    scenario.remove_temperature(1)
    selector = f'article.agent[data-agent-id="{Scenario.SENSORS_AGENT}"] .devices li[data-device-state="failing"]'
    wait_until("the failing zone", lambda: len(cards(browser, selector)) == 1)
    text = cards(browser, selector)[0].text
    assert text.startswith("thermal zone 1 (board-thermal): failing: no device: "), text
    scenario.write_temperature(1, 30000)
    wait_until("the zone ok again", lambda: len(cards(browser, selector)) == 0)


def test_a_context_switch_from_the_page_moves_the_routes(scenario):
    browser = scenario.browser

    def submit(key, value):
        form = cards(browser, 'form.context-form[data-context="TemperatureMeasurement"]')[0]
        key_input = form.find_element(By.NAME, "key")
        key_input.clear()
        key_input.send_keys(key)
        value_input = form.find_element(By.NAME, "value")
        value_input.clear()
        value_input.send_keys(value)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    def result():
        found = cards(browser, 'article.context[data-context="TemperatureMeasurement"] .context-result')
        return found[0].text if found else ""

    # A key the router keeps is refused, with the reason `context set` gives.
    submit("contextVersion", "7")
    wait_until("the refusal", lambda: result().startswith("Refused:"))
    assert result() == "Refused: contextVersion is kept by the router: it counts the accepted changes"

    submit("operatingState", "emergency")
    wait_until("the change done", lambda: result().startswith("Done:"))
    assert result() == 'Done: TemperatureMeasurement: operatingState = "emergency" (version 1)'
    wait_until("the routes to the emergency actor", lambda: route_pairs(browser) == sorted(
        [(Scenario.SOC, Scenario.EMERGENCY_ACTOR), (Scenario.BOARD, Scenario.EMERGENCY_ACTOR)]))
    # The router is asked which rule made the new pairs.
    wait_until("the rule of the new routes", lambda: {row.find_elements(By.TAG_NAME, "td")[2].text for row in cards(browser, "tr.route")}
               == {"temperature-emergency"})
    context = cards(browser, 'article.context[data-context="TemperatureMeasurement"]')[0]
    assert context.get_attribute("data-version") == "1"
    assert context.find_element(By.CSS_SELECTOR, 'tr[data-key="operatingState"] td').text == '"emergency"'

    # The page sends the version it shows: a change made since then is refused by the router.
    status, answer = scenario.post_context({"context": "TemperatureMeasurement", "key": "operatingState", "value": "normal", "expectedVersion": 0})
    assert status == 409
    assert answer["error"].startswith("TemperatureMeasurement: the router refused the update: "), answer


def test_a_killed_agent_is_shown_as_gone(scenario):
    browser = scenario.browser
    scenario.agents["emergency-actor"].send_signal(signal.SIGKILL)
    selector = f'article.agent[data-agent-id="{Scenario.EMERGENCY_AGENT}"]'
    wait_until("the agent gone", lambda: cards(browser, selector) and cards(browser, selector)[0].get_attribute("data-state") == "gone")
    assert cards(browser, selector)[0].find_element(By.CSS_SELECTOR, ".agent-state").text.startswith("gone (left ")
    wait_until("its routes gone", lambda: route_pairs(browser) == [])
    assert cards(browser, f'article.source[data-source-id="{Scenario.SOC}"] .receivers')[0].text == "goes to no actor"


def test_a_new_page_starts_from_the_snapshot_with_history(scenario):
    answer = json.loads(urllib.request.urlopen(scenario.url + "api/state", timeout=10).read())
    assert len(answer["history"]["sources"][Scenario.SOC]) >= 1
    browser = scenario.browser
    browser.get(scenario.url)
    wait_until("the agents again", lambda: len(cards(browser, "article.agent")) == 3)
    wait_until("the last value", lambda: value_text(browser, Scenario.SOC) == "51.234 °C")


def test_only_loopback_without_a_token_and_the_token_is_asked_for(scenario, tmp_path):
    refused = scenario.run_dashboard(["--listen", "0.0.0.0:0"])
    assert refused.returncode == 64
    assert "listening on 0.0.0.0 needs --token-file" in refused.stderr

    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    token.chmod(0o600)
    with scenario.dashboard(["--listen", "127.0.0.1:0", "--token-file", str(token)]) as url:
        with pytest.raises(urllib.error.HTTPError) as unauthorised:
            urllib.request.urlopen(url, timeout=10)
        assert unauthorised.value.code == 401
        assert unauthorised.value.headers["WWW-Authenticate"].startswith("Basic ")
        request = urllib.request.Request(url, headers={"Authorization": "Basic " + base64.b64encode(b"me:s3cret-token").decode()})
        assert b"coaty-edge dashboard" in urllib.request.urlopen(request, timeout=10).read()
        wrong = urllib.request.Request(url, headers={"Authorization": "Bearer s3cret-tokeN"})
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(wrong, timeout=10)
        assert denied.value.code == 401

    # A change without the dashboard's header (a form on another site) is refused.
    request = urllib.request.Request(scenario.url + "api/context", data=b'{"key": "operatingState", "value": "normal"}', method="POST")
    with pytest.raises(urllib.error.HTTPError) as forbidden:
        urllib.request.urlopen(request, timeout=10)
    assert forbidden.value.code == 403

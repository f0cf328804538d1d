"""The web face in headless Chromium (the system's chromium and chromedriver, driven by Selenium):
KB home, a page, a followed link, search in Latin and CJK, the graph, a hostile page and the
operations page; the search drop-down by keyboard; the graph's legend and caps. Each view is
saved as a screenshot under ``tests/output/screenshots/`` (kept as a CI artifact). Skipped, saying
why, when no chromium is installed (``.ci/services.sh`` installs it on CI)."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from kbwiki.web.app import create_app
from tests.support.web import add_hub, build_wiki, serving

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
SHOTS = Path(__file__).resolve().parents[1] / "output" / "screenshots"
WAIT_S = 15
OPS_TOKEN = "browser-ops-token-0123456789"

if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip(
        "no chromium/chromedriver installed (Debian: apt-get install chromium chromium-driver)", allow_module_level=True
    )

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoAlertPresentException, WebDriverException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture()
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,900",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    yield driver
    driver.quit()


@pytest.fixture()
def site(clean_db):
    wiki = build_wiki(clean_db)
    with serving(create_app(clean_db, tenant_id=1, ops_token=OPS_TOKEN)) as base:
        yield base, wiki


def shot(driver, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def no_alert(driver) -> bool:
    try:
        _ = driver.switch_to.alert  # raises when no alert is open
    except NoAlertPresentException:
        return True
    return False


def shows(locator: tuple[str, str], text: str):
    """A wait condition: the element at ``locator`` holds ``text``. Checked right after a click or
    Enter that navigates, the element found may belong to the page being left, which the driver
    reports as "does not belong to the document" rather than as a stale element: not there yet."""
    check = ec.text_to_be_present_in_element(locator, text)

    def condition(driver) -> bool:
        try:
            return check(driver)
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return False
            raise

    return condition


def search(driver, wait, text: str, slug: str) -> None:
    box = driver.find_element(By.ID, "q")
    box.clear()
    box.send_keys(text)
    # the results of this query (not those of the letters typed so far) hold the page
    selector = f'#hits[data-q="{text}"] a[href$="/page/{quote(slug, safe="")}"]'
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, selector)))


def test_read_search_graph_and_ops(browser, site):
    base, wiki = site
    wait = WebDriverWait(browser, WAIT_S)
    browser.get(f"{base}/kb/{wiki.kb_id}")
    assert browser.find_element(By.TAG_NAME, "h1").text == "web-demo"
    shot(browser, "01-kb-home")

    browser.find_element(By.LINK_TEXT, "Storage engines guide").click()
    wait.until(shows((By.ID, "page-title"), "Storage engines guide"))
    shot(browser, "02-page")

    browser.find_element(By.CSS_SELECTOR, "div.content a.wikilink[href$='/page/alpha-engine']").click()
    wait.until(shows((By.ID, "page-title"), "Alpha Engine"))
    assert "AE" in browser.find_element(By.CLASS_NAME, "aliases").text
    shot(browser, "03-followed-link")

    search(browser, wait, "beta", "beta-store")  # as you type: htmx swaps the results in
    assert browser.current_url.endswith("/page/alpha-engine")  # no navigation happened
    shot(browser, "04-search-latin")
    search(browser, wait, "国际机场", "北京大兴")
    shot(browser, "05-search-cjk")

    browser.find_element(By.ID, "graph-link").click()
    wait.until(lambda d: d.find_element(By.ID, "graph").get_attribute("data-ready") == "1")
    assert int(browser.find_element(By.ID, "graph").get_attribute("data-nodes")) >= 4
    shot(browser, "06-graph")
    # a click on a node opens its page
    x, y = browser.execute_script(
        "const p = window.kbwikiGraph.$id('beta-store').renderedPosition(); return [p.x, p.y];"
    )
    graph = browser.find_element(By.ID, "graph")
    ActionChains(browser).move_to_element_with_offset(
        graph, int(x - graph.size["width"] / 2), int(y - graph.size["height"] / 2)
    ).click().perform()
    wait.until(shows((By.ID, "page-title"), "Beta Store"))

    browser.get(f"{base}/kb/{wiki.kb_id}/page/hostile")
    title = browser.find_element(By.ID, "page-title").text
    assert title == "<script>alert(1)</script>"  # shown as text
    assert no_alert(browser) and browser.title != "pwned"
    assert browser.find_elements(By.CSS_SELECTOR, "div.content img") == []
    shot(browser, "07-hostile-page-inert")

    browser.get(f"{base}/ops")
    row = browser.find_element(By.ID, f"dl-{wiki.dead_letter_id}")
    assert "RuntimeError: extractor exploded" in row.text  # a stranger sees the headline only
    assert row.find_elements(By.TAG_NAME, "summary") == [] and "Traceback" not in row.text
    assert "kbwiki dead-letters show" in browser.find_element(By.ID, "headlines-only").text
    browser.find_element(By.NAME, "token").send_keys(OPS_TOKEN)
    browser.find_element(By.XPATH, "//button[contains(., 'sign in')]").click()
    wait.until(ec.presence_of_element_located((By.XPATH, "//button[contains(., 'sign out')]")))
    row = browser.find_element(By.ID, f"dl-{wiki.dead_letter_id}")
    row.find_element(By.TAG_NAME, "summary").click()  # the error's detail, for a signed-in operator
    assert "Traceback (most recent call last)" in row.find_element(By.CSS_SELECTOR, "pre.error").text
    assert "wiki:ingest" in browser.find_element(By.ID, "lanes").text
    assert "extractor exploded" in browser.find_element(By.ID, "dead-letter-groups").text
    assert f"dl-{wiki.other_dead_letter_id}" not in [
        e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR, "#dead-letters tr")
    ]
    shot(browser, "08-ops")
    browser.find_element(By.XPATH, "//button[contains(., 'sign out')]").click()  # its form carries the CSRF token
    wait.until(shows((By.ID, "flash"), "Signed out."))


def highlighted(driver) -> str | None:
    """The id the search box says is highlighted (aria-activedescendant), None when none is."""
    return driver.find_element(By.ID, "q").get_attribute("aria-activedescendant")


def options(driver) -> list:
    return driver.find_elements(By.CSS_SELECTOR, '#search-results [role="option"]')


def test_search_drop_down_by_keyboard(browser, site):
    base, wiki = site
    wait = WebDriverWait(browser, WAIT_S)
    browser.get(f"{base}/kb/{wiki.kb_id}/page/alpha-engine")
    box = browser.find_element(By.ID, "q")
    assert box.get_attribute("role") == "combobox" and box.get_attribute("aria-expanded") == "false"
    search(browser, wait, "beta", "beta-store")
    assert box.get_attribute("aria-expanded") == "true" and highlighted(browser) is None
    listbox = browser.find_element(By.ID, box.get_attribute("aria-controls"))
    assert listbox.get_attribute("role") == "listbox"
    found = options(browser)
    assert len(found) >= 2 and all(o.get_attribute("aria-selected") == "false" for o in found)

    box.send_keys(Keys.ARROW_DOWN)
    assert highlighted(browser) == found[0].get_attribute("id") and found[0].get_attribute("aria-selected") == "true"
    box.send_keys(Keys.ARROW_DOWN)
    assert highlighted(browser) == found[1].get_attribute("id") and found[0].get_attribute("aria-selected") == "false"
    box.send_keys(Keys.ARROW_UP)
    assert highlighted(browser) == found[0].get_attribute("id")
    box.send_keys(Keys.ARROW_UP)  # the cycle passes through "none" (the box itself)...
    assert highlighted(browser) is None
    box.send_keys(Keys.ARROW_UP)  # ...and on to the last result
    assert highlighted(browser) == found[-1].get_attribute("id")
    box.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN)  # past the last: none, then the first again
    assert highlighted(browser) == found[0].get_attribute("id")
    assert "/page/beta-store" in found[0].find_element(By.TAG_NAME, "a").get_attribute("href")
    shot(browser, "20-search-keyboard-highlight")
    box.send_keys(Keys.ENTER)  # opens the highlighted page
    wait.until(shows((By.ID, "page-title"), "Beta Store"))
    assert browser.current_url.endswith("/page/beta-store")

    box = browser.find_element(By.ID, "q")
    search(browser, wait, "alpha", "alpha-engine")
    box.send_keys(Keys.ESCAPE)  # closes the drop-down, keeps the text
    wait.until(ec.invisibility_of_element_located((By.ID, "search-results")))
    assert box.get_attribute("aria-expanded") == "false" and box.get_attribute("value") == "alpha"
    assert highlighted(browser) is None
    shot(browser, "21-search-escape-closed")
    box.send_keys(Keys.ARROW_DOWN)  # opens it again, on the first result
    assert browser.find_element(By.ID, "search-results").is_displayed()
    assert highlighted(browser) == options(browser)[0].get_attribute("id")
    box.send_keys(Keys.ARROW_UP, Keys.ENTER)  # none highlighted: the full search page
    wait.until(shows((By.TAG_NAME, "h1"), "Search"))
    assert "/search?q=alpha" in browser.current_url
    assert browser.find_element(By.CSS_SELECTOR, 'main a[href$="/page/alpha-engine"]')


def test_graph_legend_and_caps(browser, site, clean_db):
    base, wiki = site
    wait = WebDriverWait(browser, WAIT_S)
    browser.get(f"{base}/kb/{wiki.kb_id}/graph/beta-store")
    wait.until(lambda d: d.find_element(By.ID, "graph").get_attribute("data-ready") == "1")
    legend = browser.find_element(By.ID, "graph-legend")
    assert legend.is_displayed()
    for page_type in ("summary", "entity", "concept", "index", "disambiguation"):
        assert legend.find_element(By.CSS_SELECTOR, f'li[data-type="{page_type}"]').is_displayed()
    assert "A → B: page A links to page B" in legend.text and "centred on" in legend.text
    assert not browser.find_element(By.ID, "graph-capped-pages").is_displayed()  # a small graph: no cap reached
    assert not browser.find_element(By.ID, "graph-capped-links").is_displayed()
    # each node is drawn as its type's legend entry says
    drawn = browser.execute_script(
        "const cy = window.kbwikiGraph; return ['alpha-engine', 'hostile', 'index'].map(id =>"
        " [cy.$id(id).style('shape'), cy.$id(id).style('background-color')]);"
    )
    for (shape, colour), page_type in zip(drawn, ("entity", "concept", "index"), strict=True):
        item = legend.find_element(By.CSS_SELECTOR, f'li[data-type="{page_type}"]')
        assert shape == item.get_attribute("data-shape")
        assert colour == "rgb({},{},{})".format(*bytes.fromhex(item.get_attribute("data-colour")[1:]))
    shot(browser, "22-graph-legend")

    add_hub(clean_db, wiki.kb_id)  # 20 in-links and more than 80 pages within two hops
    browser.get(f"{base}/kb/{wiki.kb_id}/graph/hub")
    wait.until(lambda d: d.find_element(By.ID, "graph").get_attribute("data-ready") == "1")
    assert browser.find_element(By.ID, "graph-capped-pages").is_displayed()
    assert "80 pages" in browser.find_element(By.ID, "graph-capped-pages").text
    assert browser.find_element(By.ID, "graph-capped-links").is_displayed()
    assert browser.execute_script("return window.kbwikiGraph.$id('hub').style('border-style');") == "dashed"
    assert browser.execute_script("return window.kbwikiGraph.$id('spoke-00').style('border-style');") == "solid"
    shot(browser, "23-graph-capped")


def test_history_diff_and_revert(browser, site, clean_db):
    from repos.pages import WikiPageRepository

    base, wiki = site
    pages = WikiPageRepository(clean_db)
    page = pages.get(wiki.kb_id, "alpha-engine")
    pages.save(
        page.model_copy(
            update={"content": page.content.replace("storage engine", "storage engine, <b>rewritten</b>,")}
        ),
        written_by="batch:2",
    )
    wait = WebDriverWait(browser, WAIT_S)

    browser.get(f"{base}/kb/{wiki.kb_id}/page/alpha-engine")
    browser.find_element(By.ID, "history-link").click()
    wait.until(ec.presence_of_element_located((By.ID, "history")))
    versions = [row.get_attribute("id") for row in browser.find_elements(By.CSS_SELECTOR, "#history tbody tr")]
    assert versions == ["v2", "v1"] and "batch:2" in browser.find_element(By.ID, "v2").text
    shot(browser, "09-history")

    browser.find_element(By.ID, "compare-button").click()  # version 1 to 2, picked by default
    wait.until(ec.presence_of_element_located((By.ID, "diff")))
    added = browser.find_element(By.CSS_SELECTOR, "#diff tr.added").text
    assert "<b>rewritten</b>" in added  # the page's raw HTML, shown as text
    assert browser.find_elements(By.CSS_SELECTOR, "#diff b") == []
    assert "storage engine that writes" in browser.find_element(By.CSS_SELECTOR, "#diff tr.removed").text
    shot(browser, "10-diff")

    browser.find_element(By.CSS_SELECTOR, "a.revert").click()  # revert to version 1: signed out, no button
    wait.until(ec.presence_of_element_located((By.ID, "sign-in-first")))
    assert browser.find_elements(By.ID, "revert-button") == []
    browser.get(f"{base}/ops")
    browser.find_element(By.NAME, "token").send_keys(OPS_TOKEN)
    browser.find_element(By.XPATH, "//button[contains(., 'sign in')]").click()
    wait.until(ec.presence_of_element_located((By.XPATH, "//button[contains(., 'sign out')]")))
    browser.get(f"{base}/ops/kb/{wiki.kb_id}/revert/alpha-engine?version=1")
    assert "version 2 (current) → 1" in browser.find_element(By.TAG_NAME, "main").text
    shot(browser, "11-revert-confirm")
    browser.find_element(By.ID, "revert-button").click()
    wait.until(shows((By.ID, "flash"), "Reverted to version 1: the page is version 3 now."))
    assert "revert:1" in browser.find_element(By.ID, "v3").text
    shot(browser, "12-reverted-history")
    assert "rewritten" not in pages.get(wiki.kb_id, "alpha-engine").content

    browser.find_element(By.CSS_SELECTOR, "#history-title a").click()
    wait.until(shows((By.ID, "page-title"), "Alpha Engine"))
    assert "version 3" in browser.find_element(By.CLASS_NAME, "meta").text

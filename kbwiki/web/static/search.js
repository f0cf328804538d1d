// The search-as-you-type drop-down (#search-results, which htmx fills from the search box #q) for
// the keyboard and screen readers, as the WAI-ARIA combobox pattern has it: the box is a combobox
// (aria-expanded, aria-controls, aria-activedescendant), the results' list a listbox of options.
// Focus stays in the box (typing goes on); ArrowDown and ArrowUp move the highlight, cycling
// through "none" (the box itself): none, first, ..., last, none. Enter opens the highlighted page,
// or, with none highlighted, submits the form (the full search page). Escape closes the drop-down
// (the text stays; a second Escape clears it, the browser's own); ArrowDown, a click in the box or
// new results open it again, and a click elsewhere closes it. The roles are set here, not in the
// templates: the same results, on the search page, are a plain list of links, and without this
// script there is no drop-down to navigate. A file of this server's (the CSP allows no inline script).
(() => {
  const input = document.getElementById("q");
  const popup = document.getElementById("search-results");
  if (!input || !popup) return;
  const LISTBOX = "search-listbox";
  let active = -1; // index of the highlighted option; -1: none

  input.setAttribute("role", "combobox");
  input.setAttribute("aria-autocomplete", "list");
  input.setAttribute("aria-expanded", "false");
  if (!input.hasAttribute("aria-label")) input.setAttribute("aria-label", "Search");
  const status = document.createElement("div"); // says how many results came, for screen readers
  status.id = "search-status";
  status.className = "visually-hidden";
  status.setAttribute("role", "status");
  input.after(status);

  const options = () => Array.from(popup.querySelectorAll('[role="option"]'));
  const filled = () => popup.childElementCount > 0;
  const open = () => filled() && !popup.hidden;

  function sync() {
    const list = document.getElementById(LISTBOX);
    input.setAttribute("aria-expanded", String(open()));
    if (list && popup.contains(list)) input.setAttribute("aria-controls", LISTBOX);
    else input.removeAttribute("aria-controls");
    const all = options();
    all.forEach((option, i) => {
      option.setAttribute("aria-selected", String(i === active));
      option.classList.toggle("active", i === active);
    });
    if (active >= 0 && open()) {
      input.setAttribute("aria-activedescendant", all[active].id);
      all[active].scrollIntoView({block: "nearest"});
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  // New results (htmx swapped them in): roles and ids on them, no highlight, the drop-down open.
  function enhance() {
    active = -1;
    const list = popup.querySelector("#hits ol");
    if (list) {
      list.id = LISTBOX;
      list.setAttribute("role", "listbox");
      list.setAttribute("aria-label", "Search results");
      Array.from(list.children).forEach((item, i) => {
        item.id = `search-option-${i}`;
        item.setAttribute("role", "option");
        // out of the Tab order: the box holds focus and Enter opens the option
        item.querySelectorAll("a[href]").forEach(a => { a.tabIndex = -1; });
      });
    }
    popup.hidden = false;
    const n = options().length;
    status.textContent = !filled() ? "" : n ? `${n} result${n === 1 ? "" : "s"}: arrow keys to choose, Enter to open`
                                            : "Nothing found";
    sync();
  }

  function move(step) {
    popup.hidden = false;
    const n = options().length;
    if (n) active = ((active + 1 + step) % (n + 1) + n + 1) % (n + 1) - 1; // -1, 0, ..., n-1 in a cycle
    sync();
  }

  function close() {
    popup.hidden = true;
    active = -1;
    sync();
  }

  input.addEventListener("keydown", event => {
    if (event.isComposing || event.keyCode === 229) return; // an input method's keys (CJK) are its own
    if ((event.key === "ArrowDown" || event.key === "ArrowUp") && filled()) {
      event.preventDefault(); // not the caret's move to the start or end
      move(event.key === "ArrowDown" ? 1 : -1);
    } else if (event.key === "Enter" && open() && active >= 0) {
      const link = options()[active].querySelector("a[href]");
      if (link) {
        event.preventDefault(); // not the form's submission
        window.location.assign(link.href);
      }
    } else if (event.key === "Escape" && open()) {
      event.preventDefault(); // not the browser's clearing of the box: only the drop-down goes
      close();
    }
  });
  input.addEventListener("input", () => { active = -1; sync(); }); // a highlight of older results
  input.addEventListener("click", () => { if (filled() && popup.hidden) { popup.hidden = false; sync(); } });
  document.addEventListener("click", event => {
    if (open() && event.target !== input && !popup.contains(event.target)) close();
  });
  document.addEventListener("htmx:afterSwap", event => { if (event.detail.target === popup) enhance(); });
})();

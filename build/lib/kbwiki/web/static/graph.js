// The neighbourhood graph of a page: nodes and edges from the JSON endpoint in #graph's data-src,
// drawn with the vendored Cytoscape.js; a click on a node opens its page. No inline script (CSP).
document.addEventListener("DOMContentLoaded", async () => {
  const box = document.getElementById("graph");
  if (!box) return;
  const data = await (await fetch(box.dataset.src, {headers: {Accept: "application/json"}})).json();
  const colours = {summary: "#6b7280", entity: "#2563eb", concept: "#059669", index: "#9333ea"};
  const elements = [
    ...data.nodes.map(n => ({data: {id: n.id, label: n.title, url: n.url, colour: colours[n.type] || "#444",
                                    centre: n.id === data.center ? 1 : 0}})),
    ...data.edges.map(e => ({data: {id: e.source + "->" + e.target, source: e.source, target: e.target}})),
  ];
  const cy = cytoscape({
    container: box, elements,
    layout: {name: "cose", animate: false, randomize: false, nodeRepulsion: 8000},
    style: [
      {selector: "node", style: {"background-color": "data(colour)", label: "data(label)", "font-size": 10,
                                 "text-wrap": "ellipsis", "text-max-width": 140, width: 14, height: 14}},
      {selector: "node[centre = 1]", style: {width: 26, height: 26, "border-width": 3, "border-color": "#f59e0b",
                                             "font-weight": "bold"}},
      {selector: "edge", style: {width: 1, "line-color": "#cbd5e1", "target-arrow-color": "#cbd5e1",
                                 "target-arrow-shape": "triangle", "curve-style": "bezier"}},
    ],
  });
  cy.on("tap", "node", evt => { window.location.href = evt.target.data("url"); });
  box.dataset.nodes = String(data.nodes.length);
  box.dataset.ready = "1";
  window.kbwikiGraph = cy;
});

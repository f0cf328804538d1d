// The neighbourhood graph of a page: nodes and edges from the JSON endpoint in #graph's data-src,
// drawn with the vendored Cytoscape.js; a click on a node opens its page. No inline script (CSP).
// Each page type's colour and shape come from its entry in the legend (#graph-legend li[data-type],
// rendered from kbwiki.web.graph_style), so the drawing and the legend say the same; the legend's
// notes of the caps this graph reached are shown from the JSON's "capped".
document.addEventListener("DOMContentLoaded", async () => {
  const box = document.getElementById("graph");
  if (!box) return;
  const data = await (await fetch(box.dataset.src, {headers: {Accept: "application/json"}})).json();
  const styles = {};
  for (const item of document.querySelectorAll("#graph-legend li[data-type]")) {
    styles[item.dataset.type] = {colour: item.dataset.colour, shape: item.dataset.shape};
  }
  const other = {colour: "#444444", shape: "ellipse"};
  const elements = [
    ...data.nodes.map(n => {
      const style = styles[n.type] || other;
      return {data: {id: n.id, label: n.title, url: n.url, colour: style.colour, shape: style.shape,
                     centre: n.id === data.center ? 1 : 0, capped: n.links_capped ? 1 : 0}};
    }),
    ...data.edges.map(e => ({data: {id: e.source + "->" + e.target, source: e.source, target: e.target}})),
  ];
  const cy = cytoscape({
    container: box, elements,
    layout: {name: "cose", animate: false, randomize: false, nodeRepulsion: 8000},
    style: [
      {selector: "node", style: {"background-color": "data(colour)", shape: "data(shape)", label: "data(label)",
                                 "font-size": 10, "text-wrap": "ellipsis", "text-max-width": 140,
                                 width: 16, height: 16}},
      {selector: "node[capped = 1]", style: {"border-width": 2, "border-style": "dashed", "border-color": "#dc2626"}},
      {selector: "node[centre = 1]", style: {width: 28, height: 28, "border-width": 3, "border-color": "#f59e0b",
                                             "font-weight": "bold"}},
      {selector: "edge", style: {width: 1, "line-color": "#94a3b8", "target-arrow-color": "#94a3b8",
                                 "target-arrow-shape": "triangle", "arrow-scale": 1.2, "curve-style": "bezier"}},
    ],
  });
  cy.on("tap", "node", evt => { window.location.href = evt.target.data("url"); });
  const capped = data.capped || {};
  document.getElementById("graph-capped-links")?.toggleAttribute("hidden", !capped.links);
  document.getElementById("graph-capped-pages")?.toggleAttribute("hidden", !capped.pages);
  box.dataset.nodes = String(data.nodes.length);
  box.dataset.ready = "1";
  window.kbwikiGraph = cy;
});

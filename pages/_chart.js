// One Plotly figure (the JSON pages/_chart.py sent) drawn by plotly.js's basic bundle, which
// the app serves from static/ and the tab loads once; the figure's layout follows the viewer's
// Streamlit theme, read from the --st-* properties Streamlit sets on the component's wrapper.
const BUNDLE = "app/static/plotly-basic.min.js";
const HEIGHT_PX = 450; // Plotly's default, as st.plotly_chart uses

function bundleUrl() {
  // Beside Streamlit's own bundle (<base>/static/js/index.*.js), so a server.baseUrlPath holds.
  const own = document.querySelector('script[src*="static/js/index"]');
  return own ? new URL(`../../${BUNDLE}`, own.src).href : new URL(BUNDLE, document.baseURI).href;
}

function plotly() {
  window.__dashPlotly ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = bundleUrl();
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => {
      window.__dashPlotly = undefined; // a later chart tries again
      reject(new Error(`could not load ${script.src}`));
    };
    document.head.appendChild(script);
  });
  return window.__dashPlotly;
}

function themed(layout, el) {
  const css = getComputedStyle(el);
  const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  const text = v("--st-text-color", "#fafafa");
  const grid = v("--st-border-color", "rgba(250, 250, 250, 0.2)");
  const axis = { gridcolor: grid, zerolinecolor: grid, linecolor: grid, tickcolor: grid, automargin: true };
  const colors = v("--st-chart-categorical-colors", "");
  return {
    ...layout,
    template: {
      layout: {
        font: { color: text, family: v("--st-font", "sans-serif"), size: 12 },
        paper_bgcolor: "rgba(0, 0, 0, 0)",
        plot_bgcolor: "rgba(0, 0, 0, 0)",
        margin: { pad: 6 }, // tick labels clear of the bars and lines, as Streamlit's theme
        ...(colors ? { colorway: colors.split(",").map((c) => c.trim()) } : {}),
        xaxis: { ...axis, showgrid: false },
        yaxis: axis,
        hoverlabel: { bgcolor: v("--st-background-color", "#0e1117"), font: { color: text } },
      },
    },
  };
}

export default function ({ parentElement, data }) {
  const div = parentElement.querySelector(".dash-chart");
  const fig = JSON.parse(data);
  div.style.height = `${fig.layout?.height ?? HEIGHT_PX}px`;
  let gone = false;
  plotly()
    .then((Plotly) => {
      if (gone) return;
      Plotly.react(div, fig.data, themed(fig.layout ?? {}, parentElement), { displaylogo: false });
      // Redrawn when its width changes: a window resize, and the sidebar opening or closing,
      // which Plotly's own `responsive` (a window resize listener) would miss.
      div.__dashResize ??= new ResizeObserver(() => div.data && Plotly.Plots.resize(div));
      div.__dashResize.observe(div);
    })
    .catch((e) => {
      div.textContent = `The chart could not be drawn: ${e.message}`;
    });
  return () => {
    gone = true;
    div.__dashResize?.disconnect();
    window.Plotly?.purge(div);
  };
}

/**
 * The only way the page builds elements: text always becomes a text node, attributes are set one
 * by one, and no string is ever parsed as HTML. Data from the server (message text, tool output,
 * titles) therefore shows as text, whatever it contains.
 */

/**
 * @param {string} tag
 * @param {Record<string, string | number | boolean | ((event: Event) => void) | undefined>} [attributes]
 * @param {...(Node | string | number | null | undefined | false | (Node | string)[])} children
 * @returns {HTMLElement}
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, ""), value);
    } else if (name === "href" && !String(value).startsWith("#")) {
      throw new Error("links inside the dashboard stay inside the page");
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

/** @param {Node} parent @param {unknown[]} children */
function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces everything inside `parent`. */
export function show(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}
